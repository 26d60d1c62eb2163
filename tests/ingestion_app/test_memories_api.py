"""The memories API: list with filters and text search, read, edit (re-embedded, with history),
real delete, history, and isolation between users."""

from __future__ import annotations

import pytest

from ingestion_app.models import FactHistory, MemoryItem
from memory_site.providers import embed_one
from tests.factories import memory_write, open_session

pytestmark = pytest.mark.django_db


def remember(user, content, *, source="fact", **fields):
    return memory_write(user, content, source=source, embedding="model", **fields)


@pytest.fixture
def memories(user, other_user):
    session = open_session(user)
    items = {
        "lisbon": remember(
            user, "The user lives in Lisbon.", project_id="home", chat_session=session
        ),
        "cello": remember(user, "The user plays the cello on weekends.", project_id="hobbies"),
        "chunk": remember(
            user, "User: how do I tune a cello?", source="chunk", header="Cello tuning chat."
        ),
        "foreign": remember(other_user, "Bob lives in Lisbon too.", project_id="home"),
    }
    items["session"] = session
    return items


def ids(response):
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["results"]]


def test_list_is_paginated_newest_first_and_only_mine(api, memories):
    response = api.get("/api/v1/memories", {"page_size": 2})
    body = response.json()
    assert body["count"] == 3
    assert body["next"]
    assert ids(response) == [memories["chunk"].id, memories["cello"].id]
    item = body["results"][0]
    assert item["role"] == item["source"] == "chunk"
    assert item["header"] == "Cello tuning chat."
    assert "embedding" not in item and "raw_content" not in item
    second = api.get("/api/v1/memories", {"page_size": 2, "page": 2})
    assert ids(second) == [memories["lisbon"].id]


def test_filters(api, memories):
    session_id = str(memories["session"].id)
    assert ids(api.get("/api/v1/memories", {"project_id": "home"})) == [memories["lisbon"].id]
    assert set(ids(api.get("/api/v1/memories", {"role": "fact"}))) == {
        memories["lisbon"].id,
        memories["cello"].id,
    }
    assert ids(api.get("/api/v1/memories", {"chat_session_id": session_id})) == [
        memories["lisbon"].id
    ]
    assert ids(api.get("/api/v1/memories", {"role": "document"})) == []


def test_text_search(api, memories):
    # Full text: stemming ("weekend" finds "weekends"), header included.
    assert ids(api.get("/api/v1/memories", {"q": "weekend"})) == [memories["cello"].id]
    assert set(ids(api.get("/api/v1/memories", {"q": "cello"}))) == {
        memories["cello"].id,
        memories["chunk"].id,
    }
    assert ids(api.get("/api/v1/memories", {"q": "tuning"})) == [memories["chunk"].id]
    # Partial words still match.
    assert ids(api.get("/api/v1/memories", {"q": "Lisb"})) == [memories["lisbon"].id]
    # Web syntax: exclusion.
    assert ids(api.get("/api/v1/memories", {"q": "cello -tune"})) == [memories["cello"].id]
    assert ids(api.get("/api/v1/memories", {"q": "Bob"})) == []


@pytest.mark.parametrize(
    "params, field",
    [({"role": "nonsense"}, "role"), ({"chat_session_id": "nope"}, "chat_session_id")],
)
def test_bad_filters_are_400(api, memories, params, field):
    response = api.get("/api/v1/memories", params)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


def test_get_one(api, memories):
    memory = memories["lisbon"]
    body = api.get(f"/api/v1/memories/{memory.id}").json()
    assert body["content"] == "The user lives in Lisbon."
    assert body["project_id"] == "home"
    assert body["chat_session_id"] == str(memories["session"].id)


def test_edit_re_embeds_and_records_history(api, memories):
    memory = memories["lisbon"]
    response = api.patch(
        f"/api/v1/memories/{memory.id}",
        {"content": "The user lives in Porto. Email: ana@example.com", "topics": ["home"]},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["content"].startswith("The user lives in Porto.")
    assert "ana@example.com" not in body["content"]  # edits are redacted like everything else
    assert body["topics"] == ["home"]
    memory.refresh_from_db()
    expected = embed_one(memory.content)
    assert sum(a * b for a, b in zip(memory.embedding, expected, strict=True)) > 0.999
    history = api.get(f"/api/v1/memories/{memory.id}/history").json()
    assert history["count"] == 1
    (edit,) = history["results"]
    assert edit["event"] == "EDIT"
    assert edit["previous_content"] == "The user lives in Lisbon."
    assert edit["new_content"] == memory.content
    # The edited text is what search finds now.
    assert ids(api.get("/api/v1/memories", {"q": "Porto"})) == [memory.id]
    assert ids(api.get("/api/v1/memories", {"q": "Lisbon"})) == []


def test_edit_without_content_change_keeps_embedding_and_history(api, memories):
    memory = memories["cello"]
    before = list(memory.embedding)
    response = api.patch(
        f"/api/v1/memories/{memory.id}",
        {"content": memory.content, "project_id": "music"},
        format="json",
    )
    assert response.json()["project_id"] == "music"
    memory.refresh_from_db()
    assert list(memory.embedding) == pytest.approx(before)
    assert not FactHistory.objects.filter(memory=memory).exists()


@pytest.mark.parametrize(
    "body, field",
    [({"content": "   "}, "content"), ({"content": 5}, "content"), ({"topics": "x"}, "topics")],
)
def test_bad_edits_are_400(api, memories, body, field):
    memory = memories["lisbon"]
    response = api.patch(f"/api/v1/memories/{memory.id}", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    memory.refresh_from_db()
    assert memory.content == "The user lives in Lisbon."


def test_edit_fails_cleanly_when_the_embedder_fails(api, memories, fake_openai_embeddings):
    fake_openai_embeddings.fail_count = 1
    memory = memories["lisbon"]
    response = api.patch(f"/api/v1/memories/{memory.id}", {"content": "Porto."}, format="json")
    assert response.status_code == 502
    memory.refresh_from_db()
    assert memory.content == "The user lives in Lisbon."


def test_delete_is_real(api, memories):
    memory = memories["cello"]
    FactHistory.objects.create(memory=memory, user=memory.user, event="ADD", new_content="x")
    assert api.delete(f"/api/v1/memories/{memory.id}").status_code == 204
    assert not MemoryItem.objects.filter(id=memory.id).exists()
    assert not FactHistory.objects.filter(memory_id=memory.id).exists()
    assert api.get(f"/api/v1/memories/{memory.id}").status_code == 404
    assert api.delete(f"/api/v1/memories/{memory.id}").status_code == 404


def test_another_users_memory_is_404_everywhere(api, other_api, memories):
    foreign = memories["foreign"]
    mine = memories["lisbon"]
    for path in (f"/api/v1/memories/{foreign.id}", f"/api/v1/memories/{foreign.id}/history"):
        response = api.get(path)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "memory_not_found"
    assert (
        api.patch(f"/api/v1/memories/{foreign.id}", {"content": "x"}, format="json").status_code
        == 404
    )
    assert api.delete(f"/api/v1/memories/{foreign.id}").status_code == 404
    assert other_api.delete(f"/api/v1/memories/{mine.id}").status_code == 404
    assert MemoryItem.objects.filter(id__in=[foreign.id, mine.id]).count() == 2
    foreign.refresh_from_db()
    assert foreign.content == "Bob lives in Lisbon too."
    assert ids(other_api.get("/api/v1/memories")) == [foreign.id]


def test_anonymous_is_401(anon_api, memories):
    assert anon_api.get("/api/v1/memories").status_code == 401
    assert anon_api.get(f"/api/v1/memories/{memories['lisbon'].id}").status_code == 401
