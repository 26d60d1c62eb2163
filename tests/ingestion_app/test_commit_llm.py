"""Commit to Memory with a model: structured JSON facts, ADD/UPDATE/NOOP decisions by the model,
usage rows, and failures that store nothing (the loopback OpenAI-compatible server)."""

from __future__ import annotations

import json
import re

import pytest

from ingestion_app.models import MemoryCommitLog, MemoryItem
from sessions_app.models import UsageLog
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


def schema_name(body) -> str:
    return body["response_format"]["json_schema"]["name"]


def transcript_ids(body) -> list[int]:
    return [int(i) for i in re.findall(r"^\[(\d+)\] User:", body["messages"][-1]["content"], re.M)]


class Model:
    """Scripted model: `facts` for distillation, `decide(request) -> decisions` for decisions."""

    def __init__(self, server, facts, decide=None):
        self.server = server
        self.facts = facts
        self.decide = decide
        self.decision_requests: list[dict] = []
        server.json_responder = self

    def __call__(self, body):
        if schema_name(body) == "memory_facts":
            ids = transcript_ids(body)
            return {"facts": [{"text": text, "source_message_ids": ids[:1]} for text in self.facts]}
        request = json.loads(body["messages"][-1]["content"])
        self.decision_requests.append(request)
        return {"decisions": self.decide(request) if self.decide else []}


def commit(api, session):
    return api.post("/api/v1/memory/commit", {"chat_session_id": str(session.id)}, format="json")


def test_model_facts_are_stored_with_structured_output(api, user, fake_openai_embeddings):
    Model(
        fake_openai_embeddings,
        ["Dana Scully lives in Lisbon.", "Dana Scully owns a cat named Miso."],
    )
    session = open_session(user)
    first = add_message(
        session, "user", "I'm Dana Scully, mail me at dana@example.com. I live in Lisbon."
    )
    add_message(session, "assistant", "Noted, Dana!")
    add_message(session, "user", "My cat Miso says hi.")

    response = commit(api, session)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["facts_committed"] == 2
    contents = list(
        MemoryItem.objects.filter(user=user).order_by("id").values_list("content", flat=True)
    )
    assert contents == ["Dana Scully lives in Lisbon.", "Dana Scully owns a cat named Miso."]
    assert MemoryItem.objects.filter(source_message_ids=[first.id]).count() == 2
    (distill,) = fake_openai_embeddings.bodies("/chat/completions")
    assert distill["response_format"]["type"] == "json_schema"
    transcript = distill["messages"][-1]["content"]
    assert f"[{first.id}] User:" in transcript and "Assistant: Noted, Dana!" in transcript
    # The model only ever sees the redacted transcript.
    assert "dana@example.com" not in fake_openai_embeddings.all_text_sent()
    # No stored fact was similar enough to need a decision call.
    usage = UsageLog.objects.get(user=user)
    assert (usage.kind, usage.model, usage.session_id) == ("facts", "gpt-4o-mini", session.id)
    assert usage.tokens_in > 0 and usage.tokens_out > 0


def test_model_decides_update_and_history_keeps_the_reason(api, user, fake_openai_embeddings):
    session = open_session(user)
    model = Model(fake_openai_embeddings, ["The user lives in Paris."])
    add_message(session, "user", "I live in Paris.")
    assert commit(api, session).json()["facts_committed"] == 1
    paris = MemoryItem.objects.get(user=user)

    def decide(request):
        (fact,) = request["new_facts"]
        assert [m["memory_id"] for m in fact["similar_memories"]] == [paris.id]
        return [
            {
                "fact_index": fact["fact_index"],
                "event": "UPDATE",
                "memory_id": paris.id,
                "reason": "The user moved; the new city replaces Paris.",
            }
        ]

    model.facts, model.decide = ["The user moved to Berlin."], decide
    add_message(session, "user", "Big news: I moved to Berlin!")
    body = commit(api, session).json()

    assert (body["facts_committed"], body["facts_updated"]) == (0, 1)
    paris.refresh_from_db()
    assert paris.content == "The user moved to Berlin."
    update = paris.history.get(event="UPDATE")
    assert update.previous_content == "The user lives in Paris."
    assert update.reason == "The user moved; the new city replaces Paris."
    history = api.get(f"/api/v1/memories/{paris.id}/history").json()["results"]
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert UsageLog.objects.filter(user=user, kind="facts").count() == 3


def test_model_noop_is_counted_as_duplicate(api, user, fake_openai_embeddings):
    session = open_session(user)
    model = Model(fake_openai_embeddings, ["The user lives in Paris."])
    add_message(session, "user", "I live in Paris.")
    commit(api, session)
    model.facts = ["The user's home is in Paris."]
    model.decide = lambda request: [
        {"fact_index": f["fact_index"], "event": "NOOP", "memory_id": None, "reason": "Known."}
        for f in request["new_facts"]
    ]
    add_message(session, "user", "Home is Paris, as I said.")
    body = commit(api, session).json()
    assert (body["facts_committed"], body["facts_updated"], body["duplicates_skipped"]) == (0, 0, 1)
    assert MemoryItem.objects.filter(user=user).count() == 1


def test_identical_fact_is_skipped_without_asking_the_model(api, user, fake_openai_embeddings):
    session = open_session(user)
    model = Model(fake_openai_embeddings, ["The user lives in Paris."])
    add_message(session, "user", "I live in Paris.")
    commit(api, session)
    add_message(session, "user", "Did I say I live in Paris?")
    body = commit(api, session).json()
    assert body["duplicates_skipped"] == 1
    assert model.decision_requests == []


def test_update_of_an_unlisted_memory_is_added_instead(
    api, user, other_user, fake_openai_embeddings
):
    foreign = MemoryItem.objects.create(
        user=other_user, source="fact", content="Bob lives in Oslo."
    )
    session = open_session(user)
    model = Model(fake_openai_embeddings, ["The user lives in Paris."])
    add_message(session, "user", "I live in Paris.")
    commit(api, session)
    model.facts = ["The user lives in Rome now."]
    model.decide = lambda request: [
        {"fact_index": 0, "event": "UPDATE", "memory_id": foreign.id, "reason": "x"}
    ]
    add_message(session, "user", "I live in Rome now.")
    body = commit(api, session).json()
    assert (body["facts_committed"], body["facts_updated"]) == (1, 0)
    foreign.refresh_from_db()
    assert foreign.content == "Bob lives in Oslo."


def test_llm_failure_is_502_and_stores_nothing(api, user, fake_openai_embeddings):
    model = Model(fake_openai_embeddings, ["The user lives in Paris."])
    session = open_session(user)
    message = add_message(session, "user", "I live in Paris.")
    fake_openai_embeddings.fail_count = 1

    response = commit(api, session)

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "commit_upstream_error"
    assert "nothing was stored" in response.json()["error"]["message"]
    assert not MemoryItem.objects.exists()
    assert MemoryCommitLog.objects.get(chat_session=session).high_water_mark == 0
    # The retry distills the same messages.
    body = commit(api, session).json()
    assert body["facts_committed"] == 1
    assert body["high_water_mark"] == message.id
    assert model.facts == [MemoryItem.objects.get().content]


def test_embedder_failure_is_502_and_stores_nothing(api, user, fake_openai_embeddings):
    server = fake_openai_embeddings

    def facts_then_break_embeddings(body):
        server.fail_count = 1  # the next request is the embeddings call
        return {"facts": [{"text": "The user lives in Paris.", "source_message_ids": []}]}

    server.json_responder = facts_then_break_embeddings
    session = open_session(user)
    add_message(session, "user", "I live in Paris.")
    response = commit(api, session)
    assert response.status_code == 502
    assert "embedding model" in response.json()["error"]["message"]
    assert not MemoryItem.objects.exists()
    assert MemoryCommitLog.objects.get(chat_session=session).high_water_mark == 0


def test_decision_failure_rolls_back_everything(api, user, fake_openai):
    """Facts distilled and embedded, then the decision call fails: no fact, no mark, no usage."""
    session = open_session(user)
    model = Model(fake_openai, ["The user lives in Paris."])
    add_message(session, "user", "I live in Paris.")
    commit(api, session)
    mark = MemoryCommitLog.objects.get(chat_session=session).high_water_mark
    usage_before = UsageLog.objects.count()

    def facts_then_break(body):
        if schema_name(body) == "memory_facts":
            fake_openai.fail_count = 1  # local embeddings, so the next request is the decision
            return {
                "facts": [
                    {"text": "The user moved to Berlin.", "source_message_ids": []},
                    {"text": "The user plays chess.", "source_message_ids": []},
                ]
            }
        return model(body)

    fake_openai.json_responder = facts_then_break
    add_message(session, "user", "I moved to Berlin. I play chess.")
    response = commit(api, session)
    assert response.status_code == 502
    assert list(MemoryItem.objects.values_list("content", flat=True)) == [
        "The user lives in Paris."
    ]
    assert MemoryCommitLog.objects.get(chat_session=session).high_water_mark == mark
    assert UsageLog.objects.count() == usage_before


def test_malformed_model_answer_is_502(api, user, fake_openai_embeddings):
    fake_openai_embeddings.json_responder = lambda body: {"something": "else"}
    session = open_session(user)
    add_message(session, "user", "I live in Paris.")
    response = commit(api, session)
    assert response.status_code == 502
    assert not MemoryItem.objects.exists()
