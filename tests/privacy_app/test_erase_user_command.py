"""`manage.py erase_user`: the operator's way to honour an erasure request."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from ingestion_app.models import MemoryItem
from ingestion_app.services.memory_store import MemoryScope, memory_item_create

pytestmark = pytest.mark.django_db


def test_erase_user_exports_then_erases_only_that_user(tmp_path):
    users = get_user_model().objects
    gone, kept = users.create_user(username="gone"), users.create_user(username="kept")
    for user in (gone, kept):
        memory_item_create(
            scope=MemoryScope(user_id=user.id, app_id="default"),
            source="fact",
            content=f"{user.username} keeps bees on the roof.",
            embedding=[0.0] * 383 + [1.0],
        )
    export = tmp_path / "gone.json"

    call_command("erase_user", "gone", "--export", str(export), "--yes")

    assert not users.filter(username="gone").exists()
    assert list(MemoryItem.objects.values_list("content", flat=True)) == [
        "kept keeps bees on the roof."
    ]
    document = json.loads(export.read_text())
    assert document["user"]["username"] == "gone"
    assert "gone keeps bees on the roof." in export.read_text()


def test_erase_user_names_an_unknown_user():
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        call_command("erase_user", "nobody", "--yes")
