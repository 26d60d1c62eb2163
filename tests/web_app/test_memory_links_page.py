"""A memory's page lists the memories it is linked to: the later one that updates it, the
earlier one it updates, in words a reader understands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ingestion_app.models import MemoryItem
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db


def test_an_old_home_is_shown_as_updated_by_the_move(client, user, other_user, fake_embedder):
    client.force_login(user)
    said = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    add_message(open_session(user), "user", "I live in Austin.", created_at=said)
    add_message(
        open_session(user), "user", "I just moved to Denver.", created_at=said + timedelta(days=7)
    )
    austin = MemoryItem.objects.get(user=user, content="User: I live in Austin.")
    denver = MemoryItem.objects.get(user=user, content="User: I just moved to Denver.")

    old_page = client.get(f"/memories/{austin.id}/").content.decode()
    new_page = client.get(f"/memories/{denver.id}/").content.decode()

    assert "Linked memories" in old_page
    assert "Updated by" in old_page and f"Memory #{denver.id}" in old_page
    assert "a new home" in old_page
    assert "Updates" in new_page and f"Memory #{austin.id}" in new_page
    # Nobody else sees the page, links included.
    client.force_login(other_user)
    assert client.get(f"/memories/{austin.id}/").status_code == 404
