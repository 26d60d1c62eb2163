"""`issue_token`: the token alone on stdout, and a user who cannot log in is told how to."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


def issue(*args):
    out, err = StringIO(), StringIO()
    call_command("issue_token", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_user_prints_the_token_and_how_to_set_a_password():
    out, err = issue("carol", "--create-user")

    user = get_user_model().objects.get(username="carol")
    assert out.strip() == Token.objects.get(user=user).key
    assert "python manage.py changepassword carol" in err
    assert "no password" in err


def test_user_with_a_password_gets_only_the_token(user):
    out, err = issue(user.username)

    assert out.strip() == Token.objects.get(user=user).key
    assert err == ""


def test_unknown_user_without_create_user_is_an_error():
    with pytest.raises(CommandError, match="--create-user"):
        issue("nobody")
    assert not get_user_model().objects.filter(username="nobody").exists()
