"""Admin: export and erase a chosen user from the user list; the usage and cost report."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from sessions_app.models import UsageLog
from tests.factories import make_user
from tests.privacy_app.userdata import fill_every_owned_table, tables_mentioning

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/auth/user/"


def test_export_action_downloads_the_users_json(staff_client, user, other_user, settings, tmp_path):
    settings.MNEMO_UPLOAD_DIR = tmp_path
    fill_every_owned_table(user, marker="alicemark")
    fill_every_owned_table(other_user, marker="bobmark")
    response = staff_client.post(
        CHANGELIST, {"action": "export_data", ACTION_CHECKBOX_NAME: [user.pk]}
    )
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="mnemo-export-alice.json"'
    document = json.loads(response.content)
    assert document["user"]["username"] == "alice"
    assert any(m["content"].startswith("alicemark: reach me") for m in document["messages"])
    assert "bobmark" not in response.content.decode()


def test_erase_action_asks_first_then_erases(staff_client, user, other_user, settings, tmp_path):
    settings.MNEMO_UPLOAD_DIR = tmp_path
    fill_every_owned_table(user, marker="alicemark")
    fill_every_owned_table(other_user, marker="bobmark")
    user_client = Client()
    user_client.force_login(user)  # a browser session that must go too

    confirm_page = staff_client.post(
        CHANGELIST, {"action": "erase_data", ACTION_CHECKBOX_NAME: [user.pk]}
    )
    assert confirm_page.status_code == 200
    page = confirm_page.content.decode()
    assert "Erase all data?" in page and "sessions_app.Message: 2" in page
    assert get_user_model().objects.filter(pk=user.pk).exists()  # nothing happened yet

    done = staff_client.post(
        CHANGELIST,
        {"action": "erase_data", ACTION_CHECKBOX_NAME: [user.pk], "post": "yes"},
        follow=True,
    )
    assert done.status_code == 200
    assert "Erased 1 user(s)" in done.content.decode()
    assert not get_user_model().objects.filter(pk=user.pk).exists()
    assert tables_mentioning("alicemark") == {}
    assert tables_mentioning("bobmark")
    assert user_client.get("/admin/").status_code == 302  # signed out: the session is gone


def test_admin_cannot_erase_their_own_account(staff_client):
    root = get_user_model().objects.get(username="admin")
    response = staff_client.post(
        CHANGELIST,
        {"action": "erase_data", ACTION_CHECKBOX_NAME: [root.pk], "post": "yes"},
        follow=True,
    )
    assert "cannot erase the account you are signed in with" in response.content.decode()
    assert get_user_model().objects.filter(pk=root.pk).exists()


def test_staff_without_delete_permission_get_no_erase_action(db, user):
    staff = make_user("helpdesk", staff=True)
    staff.user_permissions.add(*_perms("view_user", "change_user"))
    client = Client()
    client.force_login(staff)
    page = client.get(CHANGELIST).content.decode()
    assert "export_data" in page
    assert "erase_data" not in page


def _perms(*codenames):
    return Permission.objects.filter(codename__in=codenames, content_type__app_label="auth")


def _usage(user, model, day, tokens_in, tokens_out, cost):
    row = UsageLog.objects.create(
        user=user, model=model, tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost
    )
    UsageLog.objects.filter(id=row.id).update(
        created_at=dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC)
    )


def test_usage_report_groups_by_user_model_and_day(staff_client, user, other_user):
    day1, day2 = dt.date(2025, 3, 1), dt.date(2025, 3, 2)
    _usage(user, "gpt-4o-mini", day1, 1000, 200, "0.000270")
    _usage(user, "gpt-4o-mini", day1, 500, 100, "0.000135")
    _usage(other_user, "gpt-4o", day2, 100, 10, "0.000350")
    page = staff_client.get(CHANGELIST)
    assert "usage-report/" in page.content.decode()

    report = staff_client.get(
        CHANGELIST + "usage-report/", {"since": "2025-03-01", "until": "2025-03-02"}
    )
    assert report.status_code == 200
    data = report.context["report"]
    assert data["totals"] == {
        "calls": 3,
        "tokens_in": 1600,
        "tokens_out": 310,
        "cost_usd": 0.000755,
    }
    assert data["rows"] == [
        {
            "day": "2025-03-01",
            "model": "gpt-4o-mini",
            "user_id": user.pk,
            "username": "alice",
            "calls": 2,
            "tokens_in": 1500,
            "tokens_out": 300,
            "cost_usd": 0.000405,
        },
        {
            "day": "2025-03-02",
            "model": "gpt-4o",
            "user_id": other_user.pk,
            "username": "bob",
            "calls": 1,
            "tokens_in": 100,
            "tokens_out": 10,
            "cost_usd": 0.00035,
        },
    ]
    html = report.content.decode()
    assert "0.000405" in html and "alice" in html and "gpt-4o-mini" in html

    only_bob = staff_client.get(CHANGELIST + "usage-report/", {"username": "bob"}).context["report"]
    assert [r["username"] for r in only_bob["rows"]] == ["bob"]
    bad = staff_client.get(CHANGELIST + "usage-report/", {"since": "March"})
    assert "expected an ISO 8601 date" in bad.content.decode()


def test_usage_report_needs_the_usage_view_permission(db):
    staff = make_user("helpdesk", staff=True)
    staff.user_permissions.add(*_perms("view_user"))
    client = Client()
    client.force_login(staff)
    assert client.get(CHANGELIST + "usage-report/").status_code == 403
