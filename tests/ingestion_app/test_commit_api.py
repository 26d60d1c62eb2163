"""Commit to Memory over HTTP, offline (local extractor and embedder): the high-water mark."""

from __future__ import annotations

import uuid

import pytest

from ingestion_app.models import FactHistory, MemoryCommitLog, MemoryItem, ProjectContext
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


def commit(api, session, **extra):
    response = api.post(
        "/api/v1/memory/commit", {"chat_session_id": str(session.id), **extra}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def facts_of(user):
    return list(MemoryItem.objects.filter(user=user, source="fact").order_by("id"))


def test_first_commit_stores_atomic_facts_with_provenance(api, user):
    session = open_session(user, project_id="trip", agent_id="planner")
    first = add_message(session, "user", "I live in Paris and I work at Acme as a designer.")
    add_message(session, "assistant", "Nice! Paris is lovely, you should live in Rome too.")
    last = add_message(session, "user", "My sister Anna is a nurse.")

    body = commit(api, session, rag_session_id="rag-1")

    assert body["facts_committed"] == 3
    assert body["facts_updated"] == 0
    assert body["duplicates_skipped"] == 0
    assert body["high_water_mark"] == last.id
    assert body["toast"]["level"] == "success"
    assert "3 new facts" in body["toast"]["message"]
    facts = facts_of(user)
    assert [f.content for f in facts] == [
        "The user lives in Paris.",
        "The user works at Acme as a designer.",
        "The user's sister Anna is a nurse.",
    ]
    assert sorted(f["id"] for f in body["facts"]) == [f.id for f in facts]
    paris = facts[0]
    assert paris.source_message_ids == [first.id]
    assert facts[2].source_message_ids == [last.id]
    assert paris.project_id == "trip"
    assert paris.agent_id == "planner"
    assert paris.chat_session_id == session.id
    assert paris.rag_session_id == "rag-1"
    assert paris.embedding is not None and len(paris.embedding) == 384
    assert paris.token_count > 0
    # Nothing the assistant said becomes a fact.
    assert not MemoryItem.objects.filter(source="fact", content__icontains="Rome").exists()
    assert list(paris.history.values_list("event", flat=True)) == [FactHistory.Event.ADD]
    log = MemoryCommitLog.objects.get(chat_session=session)
    assert (log.high_water_mark, log.commit_count, log.facts_committed) == (last.id, 1, 3)


def test_second_commit_without_new_messages_is_nothing_new(api, user):
    session = open_session(user)
    message = add_message(session, "user", "I live in Lisbon.")
    commit(api, session)

    again = commit(api, session)

    assert again["facts_committed"] == 0
    assert again["facts_updated"] == 0
    assert again["high_water_mark"] == message.id
    assert again["toast"]["level"] == "info"
    assert "nothing new" in again["toast"]["message"].lower()
    assert len(facts_of(user)) == 1


def test_empty_session_commit_is_nothing_new(api, user):
    session = open_session(user)
    body = commit(api, session)
    assert body["facts_committed"] == 0
    assert body["high_water_mark"] == 0
    assert "nothing new" in body["toast"]["message"].lower()
    assert not MemoryItem.objects.exists()


def test_high_water_mark_only_new_messages_are_distilled(api, user):
    session = open_session(user)
    add_message(session, "user", "I live in Lisbon.")
    first = commit(api, session)
    between = add_message(session, "user", "I play the cello every weekend.")
    last = add_message(session, "assistant", "That sounds relaxing.")

    second = commit(api, session)

    assert first["facts_committed"] == 1
    assert second["facts_committed"] == 1
    assert second["high_water_mark"] == last.id > first["high_water_mark"]
    newest = facts_of(user)[-1]
    assert newest.content == "The user plays the cello every weekend."
    assert newest.source_message_ids == [between.id]
    # The first message was not distilled again.
    assert MemoryItem.objects.filter(content="The user lives in Lisbon.").count() == 1
    assert MemoryCommitLog.objects.get(chat_session=session).commit_count == 2


def test_messages_without_facts_still_move_the_mark(api, user):
    session = open_session(user)
    add_message(session, "user", "Hi there! What's the weather like on Mars?")
    reply = add_message(session, "assistant", "Cold and dusty.")
    body = commit(api, session)
    assert body["facts_committed"] == 0
    assert body["high_water_mark"] == reply.id
    assert "nothing new" in body["toast"]["message"].lower()
    assert commit(api, session)["high_water_mark"] == reply.id


def test_project_context_mapping_overrides_session_project(api, user):
    session = open_session(user, project_id="scratch")
    ProjectContext.objects.create(chat_session=session, user=user, project_id="house-move")
    add_message(session, "user", "I live in Lisbon.")
    body = commit(api, session)
    assert body["project_id"] == "house-move"
    assert facts_of(user)[0].project_id == "house-move"


def test_unknown_and_foreign_sessions_are_404(api, other_api, user):
    session = open_session(user)
    add_message(session, "user", "I live in Lisbon.")

    unknown = api.post(
        "/api/v1/memory/commit", {"chat_session_id": str(uuid.uuid4())}, format="json"
    )
    foreign = other_api.post(
        "/api/v1/memory/commit", {"chat_session_id": str(session.id)}, format="json"
    )

    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "session_not_found"
    assert foreign.status_code == 404
    assert not MemoryItem.objects.exists()
    assert MemoryCommitLog.objects.filter(chat_session=session, high_water_mark__gt=0).count() == 0


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "session_id"),
        ({"session_id": "not-a-uuid"}, "session_id"),
        ({"chat_session_id": "not-a-uuid"}, "chat_session_id"),
        ({"chat_session_id": 12}, "chat_session_id"),
        ({"chat_session_id": str(uuid.uuid4()), "rag_session_id": 5}, "rag_session_id"),
    ],
)
def test_bad_input_is_400_naming_the_field(api, body, field):
    response = api.post("/api/v1/memory/commit", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


def test_session_id_and_its_alias_chat_session_id_both_commit(api, user):
    session = open_session(user)
    first = api.post("/api/v1/memory/commit", {"session_id": str(session.id)}, format="json")
    again = api.post("/api/v1/memory/commit", {"chat_session_id": str(session.id)}, format="json")
    assert first.status_code == again.status_code == 200, first.content
    assert first.json()["session_id"] == first.json()["chat_session_id"] == str(session.id)
    assert again.json()["session_id"] == str(session.id)
    both = api.post(
        "/api/v1/memory/commit",
        {"session_id": str(session.id), "chat_session_id": str(uuid.uuid4())},
        format="json",
    )
    assert both.status_code == 400 and both.json()["error"]["field"] == "chat_session_id"
    unknown = api.post("/api/v1/memory/commit", {"session_id": str(uuid.uuid4())}, format="json")
    assert unknown.status_code == 404 and unknown.json()["error"]["field"] == "session_id"


def test_anonymous_commit_is_401(anon_api, user):
    session = open_session(user)
    response = anon_api.post(
        "/api/v1/memory/commit", {"chat_session_id": str(session.id)}, format="json"
    )
    assert response.status_code == 401
