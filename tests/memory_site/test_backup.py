"""`manage.py backup` and `restore`: a dump taken, data lost, the dump put back."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from ingestion_app.models import MemoryItem
from ingestion_app.services.memory_store import MemoryScope, memory_item_create


@pytest.mark.django_db(transaction=True)
def test_a_backup_restores_the_users_and_memories_deleted_after_it(tmp_path):
    user = get_user_model().objects.create_user(username="kept")
    memory_item_create(
        scope=MemoryScope(user_id=user.id, app_id="default"),
        source="fact",
        content="The user's passport number ends in 4471.",
        embedding=[0.0] * 383 + [1.0],
    )
    dump = tmp_path / "backups" / "mnemo.dump"

    call_command("backup", str(dump))
    get_user_model().objects.filter(username="kept").delete()
    assert not MemoryItem.objects.exists()
    call_command("restore", str(dump), "--yes")

    restored = get_user_model().objects.get(username="kept")
    (memory,) = MemoryItem.objects.filter(user=restored)
    assert memory.content == "The user's passport number ends in 4471."
    assert not (tmp_path / "backups" / "mnemo.dump.partial").exists()


def test_restore_refuses_a_missing_dump(tmp_path):
    with pytest.raises(CommandError, match="no such dump"):
        call_command("restore", str(tmp_path / "nope.dump"), "--yes")
