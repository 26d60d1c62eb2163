"""The entities API and entity-aware search, driven through HTTP as a client would."""

from __future__ import annotations

import pytest

from entities_app.models import Entity
from ingestion_app.services.memory_store import MemoryScope, memory_item_create
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db

ENTITIES = "/api/v1/entities"
SEARCH = "/api/v1/memory/search"
STATS = "/api/v1/memory/stats"


def chat(user, *lines: str, speaker: str = ""):
    session = open_session(user)
    for line in lines:
        metadata = {"speaker": speaker} if speaker else {}
        add_message(session, "user", line, metadata=metadata)
    return session


@pytest.fixture
def ines_story(user, fake_embedder):
    chat(user, "My sister Ines is getting married in Lisbon in June.")
    chat(user, "I bought a blue dress for the ceremony today.")
    chat(user, "ines asked me to give a speech at the wedding.", "My dog Max hates the car.")
    return Entity.objects.get(user=user, normalized_name="ines")


def test_list_filters_and_paginates(api, ines_story):
    listed = api.get(ENTITIES).json()
    assert listed["count"] == 3
    assert [entity["name"] for entity in listed["results"]][0] == "Ines"
    pets = api.get(ENTITIES, {"type": "pet"}).json()["results"]
    assert [(entity["name"], entity["type"]) for entity in pets] == [("Max", "pet")]
    assert [e["name"] for e in api.get(ENTITIES, {"q": "lisb"}).json()["results"]] == ["Lisbon"]
    assert api.get(ENTITIES, {"page_size": 1}).json()["next"]
    assert api.get(ENTITIES, {"type": "alien"}).status_code == 400
    bad_bucket = api.get(ENTITIES, {"bucket": "NOPE"})
    assert bad_bucket.status_code == 400
    assert bad_bucket.json()["error"]["field"] == "bucket"


def test_detail_shows_mentions_and_related_entities(api, ines_story):
    body = api.get(f"{ENTITIES}/{ines_story.id}").json()

    assert body["type"] == "person"
    assert body["description"] == "the user's sister"
    assert body["mention_count"] == 2
    sentences = sorted(mention["sentence"] for mention in body["mentions"])
    assert sentences == [
        "My sister Ines is getting married in Lisbon in June.",
        "ines asked me to give a speech at the wedding.",
    ]
    assert "Lisbon" in [related["name"] for related in body["related_entities"]]


def test_patch_delete_and_merge_with_isolation(api, other_api, user, ines_story):
    other = Entity.objects.get(user=user, normalized_name="max")
    patched = api.patch(
        f"{ENTITIES}/{ines_story.id}", {"description": "Bride in June"}, format="json"
    )
    assert patched.status_code == 200
    assert patched.json()["description_history"][-1]["description"] == "the user's sister"
    clash = api.patch(f"{ENTITIES}/{ines_story.id}", {"name": "Max"}, format="json")
    assert clash.status_code == 400 and clash.json()["error"]["field"] == "name"

    assert other_api.get(f"{ENTITIES}/{ines_story.id}").status_code == 404
    assert other_api.delete(f"{ENTITIES}/{ines_story.id}").status_code == 404
    stolen = other_api.post(
        f"{ENTITIES}/merge", {"target_id": ines_story.id, "source_ids": [other.id]}, format="json"
    )
    assert stolen.status_code == 404

    merged = api.post(
        f"{ENTITIES}/merge", {"target_id": ines_story.id, "source_ids": [other.id]}, format="json"
    )
    assert merged.status_code == 200
    assert merged.json()["mention_count"] == 3 and "max" in merged.json()["aliases"]
    assert api.get(f"{ENTITIES}/{other.id}").status_code == 404
    assert api.post(f"{ENTITIES}/merge", {"target_id": 1}, format="json").status_code == 400

    assert api.delete(f"{ENTITIES}/{ines_story.id}").status_code == 204
    assert api.get(ENTITIES).json()["count"] == 1


def test_search_pulls_in_every_session_about_an_entity(api, ines_story):
    body = api.post(
        SEARCH,
        {"query": "What about Ines?", "include_entities": True, "include_cross_refs": True},
        format="json",
    ).json()

    memories = [item for item in body["items"] if item["type"] == "memory"]
    entities = [item for item in body["items"] if item["type"] == "entity"]
    texts = " ".join(item["content"] for item in memories)
    assert "Lisbon" in texts and "speech" in texts
    assert entities[0]["name"] == "Ines"
    assert entities[0]["content"] == "[ENTITY: person] Ines (my sister): the user's sister"
    assert entities[0]["mention_count"] == 2
    linked = [item for item in memories if item["cross_references"]]
    assert any(
        link["relationship"] == "mentions_same_entity" and link["reason"] == "both mention Ines"
        for item in linked
        for link in item["cross_references"]
    )


def test_search_by_bucket_and_stats(api, ines_story):
    personal = api.post(
        SEARCH, {"query": "dress", "buckets": ["PERSONAL_LIFE"]}, format="json"
    ).json()
    assert all(item["bucket"] == "PERSONAL_LIFE" for item in personal["items"])
    bad = api.post(SEARCH, {"query": "dress", "buckets": ["NOPE"]}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "buckets"

    memory_item_create(
        scope=MemoryScope(user_id=ines_story.user_id, app_id="default"),
        source="fact",
        content="The user's sister Ines is getting married.",
    )
    memory_item_create(
        scope=MemoryScope(user_id=ines_story.user_id, app_id="default"),
        source="fact",
        content="The user deployed the API server.",
    )
    stats = api.get(STATS).json()
    assert stats["total_entities"] == 3
    # The stats count what the browser lists (facts here; message items repeat their pair).
    assert stats["bucket_distribution"] == {"PERSONAL_LIFE": 1, "CREATOR": 1}
    assert sum(stats["bucket_distribution"].values()) == stats["total"]


def test_entities_in_a_bucketed_search_are_those_mentioned_in_the_buckets(api, user, ines_story):
    chat(user, "Project Atlas ships the new API server next sprint.")
    body = {"query": "Atlas and Ines", "include_entities": True}
    everywhere = {
        i["name"]
        for i in api.post(SEARCH, body, format="json").json()["items"]
        if i["type"] == "entity"
    }
    assert {"Atlas", "Ines"} <= everywhere

    personal = api.post(SEARCH, {**body, "buckets": ["PERSONAL_LIFE"]}, format="json").json()
    names = {item["name"] for item in personal["items"] if item["type"] == "entity"}
    assert "Ines" in names and "Atlas" not in names


def test_a_memory_that_changes_what_an_earlier_one_says_links_to_it_as_an_update(
    api, user, fake_embedder
):
    """ "I live in Austin and work at Globex", a week later "I just moved to Denver": the
    newer memory points to the older one with an "updates" link naming what changed, shown
    on both with its direction, and gone once the older memory is deleted."""
    from datetime import UTC, datetime, timedelta

    said = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    add_message(open_session(user), "user", "I live in Austin and work at Globex.", created_at=said)
    add_message(
        open_session(user), "user", "I just moved to Denver.", created_at=said + timedelta(days=7)
    )
    add_message(
        open_session(user),
        "user",
        "My favourite band is Radiohead.",
        created_at=said + timedelta(days=8),
    )

    def links_of(query: str, text: str) -> tuple[int, list[dict]]:
        body = api.post(SEARCH, {"query": query, "include_cross_refs": True}, format="json").json()
        item = next(item for item in body["items"] if text in item["content"])
        return item["id"], [
            link for link in item["cross_references"] if link["relationship"] == "updates"
        ]

    austin_id, austin_links = links_of("Austin Globex", "Austin")
    denver_id, denver_links = links_of("Denver", "Denver")
    assert [(link["direction"], link["id"], link["reason"]) for link in denver_links] == [
        ("outgoing", austin_id, "a new home")
    ]
    assert [(link["direction"], link["id"]) for link in austin_links] == [("incoming", denver_id)]
    assert links_of("Radiohead", "Radiohead")[1] == []  # says nothing new of either

    assert api.delete(f"/api/v1/memories/{austin_id}").status_code == 204
    assert links_of("Denver", "Denver")[1] == []


def test_a_chat_that_says_it_follows_up_an_earlier_one_links_to_it(api, user, fake_embedder):
    chat(user, "My sister Ines is getting married in Lisbon.")
    chat(user, "Quick update on Ines: she picked the venue.")
    chat(user, "Ines sent me the guest list.")  # names her again, says no follow-up

    body = api.post(
        SEARCH, {"query": "Ines venue guest list", "include_cross_refs": True}, format="json"
    ).json()
    links = {
        item["content"]: {
            (link["relationship"], link["direction"], link["id"])
            for link in item["cross_references"]
        }
        for item in body["items"]
    }
    married = next(item["id"] for item in body["items"] if "married" in item["content"])
    venue = next(item["id"] for item in body["items"] if "venue" in item["content"])
    follow_up = links["User: Quick update on Ines: she picked the venue."]
    assert ("follows_up", "outgoing", married) in follow_up
    assert ("mentions_same_entity", "outgoing", venue) in links[
        "User: Ines sent me the guest list."
    ]
