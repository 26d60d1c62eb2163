"""Staff screens for entities: search by name and alias, and the merge action."""

from __future__ import annotations

import pytest

from entities_app.models import Entity
from ingestion_app.models import MemoryItem
from tests.factories import memory_write

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


def remember(user, text: str) -> MemoryItem:
    return memory_write(user, text, embedding=None)


def test_search_and_merge(staff_client, user, other_user):
    remember(user, "My sister Ines lives in Lisbon.")
    remember(user, "Ines called about the flowers.")
    remember(user, "Nessa said hi too.")
    remember(other_user, "Ines is my boss.")

    found = staff_client.get("/admin/entities_app/entity/", {"q": "my sister"})
    assert found.status_code == 200 and b"Ines" in found.content

    ines = Entity.objects.get(user=user, normalized_name="ines")
    nessa = Entity.objects.get(user=user, normalized_name="nessa")
    response = staff_client.post(
        "/admin/entities_app/entity/",
        {"action": "merge_entities", "_selected_action": [ines.id, nessa.id]},
        follow=True,
    )
    assert b"Merged 1 entities into Ines." in response.content
    ines.refresh_from_db()
    assert ines.mention_count == 3 and "nessa" in ines.aliases

    theirs = Entity.objects.get(user=other_user, normalized_name="ines")
    refused = staff_client.post(
        "/admin/entities_app/entity/",
        {"action": "merge_entities", "_selected_action": [ines.id, theirs.id]},
        follow=True,
    )
    assert b"same user and app" in refused.content
    assert Entity.objects.filter(id=theirs.id).exists()
