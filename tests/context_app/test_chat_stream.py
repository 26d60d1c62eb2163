"""POST /api/v1/ai/chat/stream through the test client, against the loopback OpenAI server."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from context_app.models import ContextSettings, InjectionLog, UserChatSummary
from memory_site.providers.local import NO_MODEL_NOTICE
from sessions_app.models import ChatSession, Message, UsageLog
from tests.context_app.stream_helpers import (  # noqa: F401 - generous_budget is a fixture
    STREAM_URL,
    event_names,
    generous_budget,
    parse_sse,
    read_stream,
    reply_text,
    stream_turn,
)
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("generous_budget")]


def model_requests(fake_openai) -> list[dict]:
    """Bodies of the streamed chat requests (the reply calls, not the hooks' JSON calls)."""
    return [body for body in fake_openai.bodies("/chat/completions") if body.get("stream")]


def without_indexes(field: str) -> str:
    """ "messages[1].role" or "messages.1.role" -> "messages.role": the shared error handler
    decides how list positions are spelled; these tests only care which field is named."""
    parts = field.replace("[", ".").replace("]", "").split(".")
    return ".".join(part for part in parts if part and not part.isdigit())


def warm_session(user, turns: int = 2):
    """An open session that already has `turns` user turns (and replies)."""
    session = open_session(user, title="Baking")
    for index in range(turns):
        add_message(session, "user", f"Earlier question number {index} about rye flour.")
        add_message(session, "assistant", "Earlier answer.")
    return session


def add_rollups(user, recent: str, history: str = ""):
    UserChatSummary.objects.create(user=user, kind="recent", summary=recent)
    if history:
        UserChatSummary.objects.create(user=user, kind="history", summary=history)


def test_turn_streams_chunks_then_done_and_stores_both_messages(api, user, fake_openai):
    fake_openai.reply_text = "Rye needs more water than wheat."
    session = open_session(user)

    response, events, _ = stream_turn(
        api, "How much water does rye dough need?", session_id=session.id
    )

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    assert response["Cache-Control"] == "no-cache"
    assert response["X-Accel-Buffering"] == "no"
    names = event_names(events)
    assert names[-1] == "done"
    assert set(names[:-1]) == {"message"} and len(names) > 2
    assert reply_text(events) == "Rye needs more water than wheat."
    response_ids = {data["id"] for name, data in events if name == "message"}
    assert len(response_ids) == 1

    done = events[-1][1]
    assert done["status"] == "completed"
    user_message = Message.objects.get(id=done["message_ids"]["user"])
    assistant = Message.objects.get(id=done["message_ids"]["assistant"])
    assert (user_message.role, user_message.content) == (
        "user",
        "How much water does rye dough need?",
    )
    assert (assistant.role, assistant.content) == ("assistant", "Rye needs more water than wheat.")
    assert assistant.incomplete is False
    assert assistant.session_id == user_message.session_id == session.id
    assert assistant.metadata["response_id"] == response_ids.pop()
    assert done["usage"]["tokens_out"] > 0 and done["usage"]["tokens_in"] > 0


def test_one_usage_row_per_reply_priced_from_the_table(api, user, fake_openai, settings):
    settings.MNEMO_PRICE_TABLE = {**settings.MNEMO_PRICE_TABLE, "gpt-4o-mini": [1000.0, 2000.0]}
    session = open_session(user)
    _, first, _ = stream_turn(api, "First question about bread.", session_id=session.id)
    _, second, _ = stream_turn(api, "Second question about bread.", session_id=session.id)

    rows = list(UsageLog.objects.filter(user=user, kind="chat").order_by("id"))
    assert len(rows) == 2
    for row, events in zip(rows, (first, second), strict=True):
        usage = events[-1][1]["usage"]
        assert (row.tokens_in, row.tokens_out) == (usage["tokens_in"], usage["tokens_out"])
        assert row.model == "gpt-4o-mini"
        assert row.session_id == session.id
        expected = (Decimal(1000) * row.tokens_in + Decimal(2000) * row.tokens_out) / Decimal(
            1_000_000
        )
        assert row.cost_usd == expected.quantize(Decimal("0.000001"))


def test_debug_event_only_with_the_debug_header(api, user, fake_openai):
    session = warm_session(user)
    add_rollups(user, "- The user bakes rye bread every weekend.")

    _, plain, _ = stream_turn(api, "Should I add caraway to my rye?", session_id=session.id)
    _, debug, _ = stream_turn(
        api, "And how long should it proof?", session_id=session.id, debug=True
    )

    assert "context" not in event_names(plain)
    assert event_names(debug)[0] == "context"
    assert event_names(debug).count("context") == 1
    context = debug[0][1]
    assert set(context) >= {"topic", "segments", "pack", "hash", "reused", "elapsed_ms"}
    assert "[Recent context]" in context["pack"]
    recent = next(s for s in context["segments"] if s["name"] == "Recent context")
    assert recent["chars"] == len("- The user bakes rye bread every weekend.")
    assert recent["truncated"] is False and len(recent["hash"]) == 16


def test_pack_is_prepended_as_one_system_message(api, user, fake_openai):
    session = warm_session(user)
    add_rollups(
        user, "- The user bakes rye bread every weekend.", "- The user once ran a bakery in Berlin."
    )
    history = [{"role": "system", "content": "You are a helpful baker."}]

    _, events, _ = stream_turn(
        api, "What rye ratio do you suggest?", session_id=session.id, debug=True, history=history
    )

    sent = model_requests(fake_openai)[-1]["messages"]
    pack = events[0][1]["pack"]
    assert sent[0] == {"role": "system", "content": pack}
    assert sent[1] == {"role": "system", "content": "You are a helpful baker."}
    assert sent[-1] == {"role": "user", "content": "What rye ratio do you suggest?"}
    assert "[Recent context]\n- The user bakes rye bread every weekend." in pack
    assert "[Long-term history]\n- The user once ran a bakery in Berlin." in pack
    assert "not instructions" in pack
    done = events[-1][1]
    assert done["context"] == {"chars": len(pack), "hash": events[0][1]["hash"]}
    session.refresh_from_db()
    assert session.metadata["last_context_hash"] == done["context"]["hash"]


def test_no_pack_without_v2_or_before_enough_turns(api, user, fake_openai):
    ContextSettings.objects.update_or_create(pk=1, defaults={"min_user_turns": 3})
    add_rollups(user, "- The user bakes rye bread every weekend.")
    session = open_session(user)
    stream_turn(api, "First turn.", session_id=session.id)
    stream_turn(api, "Second turn.", session_id=session.id)
    stream_turn(api, "Third turn, but context v1.", session_id=session.id, context_version="v1")
    stream_turn(api, "Fourth turn, context v2.", session_id=session.id)

    systems = [
        [m for m in body["messages"] if m["role"] == "system"]
        for body in model_requests(fake_openai)
    ]
    assert systems[:3] == [[], [], []]
    assert "[Recent context]" in systems[3][0]["content"]


def test_without_session_the_reply_streams_and_nothing_is_stored(api, user, fake_openai):
    response, events, _ = stream_turn(api, "A one-off question.")
    assert response.status_code == 200
    assert event_names(events)[-1] == "done"
    assert events[-1][1]["message_ids"] == {"user": None, "assistant": None}
    assert not Message.objects.exists()
    assert UsageLog.objects.filter(user=user, kind="chat", session=None).count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "hello"}, "messages"),
        ({"messages": [{"role": "assistant", "content": "Hi"}]}, "messages"),
        ({"messages": [{"role": "user", "content": "   "}]}, "messages"),
        ({"messages": [{"role": "wizard", "content": "Hi"}]}, "messages.role"),
        ({"messages": [{"role": "user", "content": 42}]}, "messages.content"),
        ({"messages": [{"role": "user", "content": "Hi"}], "session_id": "nope"}, "session_id"),
        (
            {"messages": [{"role": "user", "content": "Hi"}], "context_version": "v3"},
            "context_version",
        ),
        (
            {"messages": [{"role": "user", "content": "Hi"}], "attachments": [{"text": "x"}]},
            "attachments.filename",
        ),
        ({"messages": [{"role": "user", "content": "Hi"}], "model": "gpt 4; drop"}, "model"),
    ],
)
def test_bad_input_is_a_json_400_naming_the_field(api, user, fake_openai, body, field):
    response = api.post(STREAM_URL, body, format="json", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert without_indexes(response.json()["error"]["field"]) == field
    assert not Message.objects.exists()
    assert model_requests(fake_openai) == []


def test_malformed_json_is_a_json_400(api, fake_openai):
    response = api.generic("POST", STREAM_URL, "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


def test_authentication_required(anon_api, fake_openai):
    response = anon_api.post(
        STREAM_URL, {"messages": [{"role": "user", "content": "Hi"}]}, format="json"
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] in ("not_authenticated", "authentication_failed")
    bad = anon_api.post(
        STREAM_URL,
        {"messages": [{"role": "user", "content": "Hi"}]},
        format="json",
        HTTP_AUTHORIZATION="Token not-a-real-token",
    )
    assert bad.status_code == 401


def test_another_users_session_is_404_and_nothing_is_stored(api, other_user, fake_openai):
    foreign = open_session(other_user)
    response, _, _ = stream_turn(api, "Let me in.", session_id=foreign.id)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "session_not_found"
    assert not Message.objects.filter(session=foreign).exists()
    assert model_requests(fake_openai) == []
    missing, _, _ = stream_turn(api, "Anyone?", session_id=uuid.uuid4())
    assert missing.status_code == 404


def test_closed_session_is_409(api, user, fake_openai):
    session = open_session(user)
    ChatSession.objects.filter(id=session.id).update(status="closed")
    response, _, _ = stream_turn(api, "Still there?", session_id=session.id)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "session_not_open"
    assert model_requests(fake_openai) == []


def test_model_failure_is_an_error_event_and_keeps_the_user_message(api, user, fake_openai):
    session = open_session(user)
    fake_openai.fail_count = 1

    response, events, _ = stream_turn(api, "Will this fail?", session_id=session.id)

    assert response.status_code == 200
    assert event_names(events) == ["error"]
    error = events[0][1]
    assert error["code"] == "upstream_error"
    assert "language model failed" in error["message"]
    assert list(Message.objects.filter(session=session).values_list("role", "content")) == [
        ("user", "Will this fail?")
    ]


def test_offline_provider_answers_honestly_and_shows_its_context(api, user, settings):
    settings.LLM_PROVIDER = "local"
    ContextSettings.objects.update_or_create(pk=1, defaults={"min_user_turns": 1})
    add_rollups(user, "- The user keeps a sourdough starter called Clint.")
    session = open_session(user)

    response, events, _ = stream_turn(
        api, "How often should I feed my starter?", session_id=session.id
    )

    assert response.status_code == 200
    text = reply_text(events)
    assert NO_MODEL_NOTICE in text
    assert "Context it would have used" in text
    assert "[Recent context]" in text and "starter called Clint" in text
    done = events[-1][1]
    assert done["status"] == "completed" and done["model"] == "local"
    assert Message.objects.get(id=done["message_ids"]["assistant"]).content == text
    assert UsageLog.objects.get(user=user, kind="chat").cost_usd == 0


def test_keepalive_comments_while_the_model_is_silent(api, user, fake_openai, monkeypatch):
    monkeypatch.setattr("memory_site.sse.KEEPALIVE_SECONDS", 0.1)
    fake_openai.delay_seconds = 0.6
    response, events, comments = stream_turn(api, "Take your time.")
    assert comments.count("keepalive") >= 2
    assert event_names(events)[-1] == "done"


def test_attachments_are_clipped_and_large_ones_referenced(api, user, fake_openai):
    session = open_session(user)
    notes = "Line about flour ratios.\n" * 360  # ~9,000 chars
    more = "Another sentence about ovens. " * 330  # ~9,900 chars
    huge = "x " * 10_000  # 20,000 chars: larger than the whole allowance
    _, events, _ = stream_turn(
        api,
        "Please read these.",
        session_id=session.id,
        attachments=[
            {"filename": "notes.txt", "content_type": "text/plain", "text": notes},
            {"filename": "more.txt", "text": more},
            {"filename": "dump.log", "text": huge},
        ],
    )
    assert event_names(events)[-1] == "done"
    sent = model_requests(fake_openai)[-1]["messages"][-1]["content"]
    assert sent.startswith("Please read these.")
    assert "[Attachment: notes.txt (text/plain)]" in sent and notes.strip() in sent
    assert "[Attachment: more.txt (text/plain)]" in sent and "(… truncated)" in sent
    assert "dump.log" in sent and "x x x x" not in sent
    report = {
        item["filename"]: item for item in Message.objects.get(role="user").metadata["attachments"]
    }
    assert report["notes.txt"]["mode"] == "inline"
    assert report["more.txt"]["mode"] == "clipped"
    assert report["dump.log"]["mode"] == "referenced"
    assert sum(item["inline_chars"] for item in report.values()) <= 15_000


def test_text_sent_to_the_model_is_redacted_but_stored_original(api, user, fake_openai):
    session = open_session(user)
    stream_turn(
        api,
        "Email me at jane.doe@example.com please.",
        session_id=session.id,
        attachments=[{"filename": "contact.txt", "text": "Call jane.doe@example.com"}],
    )
    sent = model_requests(fake_openai)[-1]["messages"][-1]["content"]
    assert "jane.doe@example.com" not in sent
    assert "[EMAIL]" in sent
    stored = Message.objects.get(role="user")
    assert stored.content == "Email me at jane.doe@example.com please."


def test_injection_log_links_the_reply(api, user, fake_openai):
    session = warm_session(user)
    add_rollups(user, "- The user bakes rye bread every weekend.")
    _, events, _ = stream_turn(api, "Any tips for a crisp crust?", session_id=session.id)
    done = events[-1][1]
    log = InjectionLog.objects.get(session=session)
    assert log.user_message_id == done["message_ids"]["user"]
    assert log.assistant_message_id == done["message_ids"]["assistant"]
    assert log.pack_hash == done["context"]["hash"]
    assert log.turn_number == 3


def test_previous_response_id_is_kept_with_the_turn(api, user, fake_openai):
    session = open_session(user)
    _, events, _ = stream_turn(
        api, "Continue.", session_id=session.id, previous_response_id="resp_123"
    )
    done = events[-1][1]
    assert (
        Message.objects.get(id=done["message_ids"]["user"]).metadata["previous_response_id"]
        == "resp_123"
    )
    assert (
        Message.objects.get(id=done["message_ids"]["assistant"]).metadata["previous_response_id"]
        == "resp_123"
    )


def test_stream_endpoint_is_in_the_openapi_schema(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    body = response.content.decode()
    assert "/api/v1/ai/chat/stream" in body
    assert "text/event-stream" in body
    assert "X-Reggie-Context-Debug" in body


def test_parse_sse_reads_frames_and_comments():
    events, comments = parse_sse(b': keepalive\n\nevent: message\ndata: {"chunk": "a"}\n\n')
    assert events == [("message", {"chunk": "a"})]
    assert comments == ["keepalive"]
    assert read_stream([b"a", b"b"]) == b"ab"


def test_a_turn_runs_a_bounded_number_of_queries(
    api, user, fake_openai_embeddings, django_assert_max_num_queries
):
    """The whole turn: validation, context pack, both messages stored with their hooks, usage.
    Measured 66 queries (9 earlier messages, rollups), 73 with entity extraction (a handful
    per stored batch: resolve, mentions, counts, links; one entity read for the pack); the
    bound sits a little above so one more query passes but a query per message or per memory
    does not."""
    fake_openai_embeddings.reply_text = "Rye needs more water than wheat."
    session = warm_session(user)
    add_rollups(user, "- The user bakes rye bread.")
    for index in range(5):
        add_message(session, "user", f"Rye bread note {index} about a sour starter.")

    with django_assert_max_num_queries(78):
        response, events, _ = stream_turn(
            api, "How much water does rye dough need?", session_id=session.id
        )

    assert response.status_code == 200
    assert event_names(events)[-1] == "done"
    assert reply_text(events) == "Rye needs more water than wheat."
