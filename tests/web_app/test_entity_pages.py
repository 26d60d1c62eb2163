"""The entity pages of the memory browser: list with its relationship picture, entity page."""

from __future__ import annotations

import pytest

from entities_app.models import Entity
from entities_app.services.entities import entities_extract
from tests.web_app.helpers import store_memory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


@pytest.fixture
def alice(client, user):
    client.force_login(user)
    first = store_memory(user, "My sister Ines lives in Lisbon with her dog Max.", embed=False)
    second = store_memory(user, "Ines is getting married in June.", embed=False)
    entities_extract(items=[first, second])
    return user


def test_list_shows_entities_with_a_picture_and_filters(client, alice, other_user):
    entities_extract(items=[store_memory(other_user, "Bob visited Paris.", embed=False)])

    html = client.get("/memories/entities/").content.decode()

    assert "Ines" in html and "Lisbon" in html and "Max" in html
    assert "Paris" not in html
    assert "<svg" in html and "<line" in html
    pets = client.get("/memories/entities/", {"type": "pet"}).content.decode()
    assert ">Max</a>" in pets and ">Lisbon</a>" not in pets


def test_entity_page_shows_description_mentions_and_related(client, alice, other_user):
    ines = Entity.objects.get(user=alice, normalized_name="ines")

    html = client.get(f"/memories/entities/{ines.id}/").content.decode()

    assert "the user&#x27;s sister" in html
    assert "Ines is getting married in June." in html
    assert "/memories/" in html and ">Lisbon</a>" in html

    client.force_login(other_user)
    assert client.get(f"/memories/entities/{ines.id}/").status_code == 404
