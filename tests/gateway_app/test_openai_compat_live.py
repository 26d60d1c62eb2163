"""The OpenAI-compatible endpoint driven by the real `openai` SDK against Mnemo on loopback,
with a fake upstream that records what it was sent."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import timedelta

import httpx
import openai
import pytest
from django.utils import timezone

from context_app.models import ContextSettings, InjectionLog
from ingestion_app.models import MemoryItem
from ingestion_app.services import deferred_embeddings
from ingestion_app.services.deferred_embeddings import pending_embeddings_wait
from sessions_app.models import ChatSession, Message, UsageLog
from sessions_app.services.sessions import sessions_close_stale
from tests.context_app.stream_helpers import generous_budget  # noqa: F401
from tests.factories import open_session
from tests.gateway_app.conftest import token_for

pytestmark = pytest.mark.django_db(transaction=True)

SYSTEM = {"role": "system", "content": "You are a helpful travel assistant."}


def client_for(live_url, user, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{live_url}/v1", api_key=token_for(user), max_retries=0, timeout=20, **kwargs
    )


def chat_like_an_app(client, turns, *, stream=False, first_system=SYSTEM):
    """Hold a conversation the way chat apps do: the full history every turn."""
    history = [first_system] if first_system else []
    replies = []
    for text in turns:
        history.append({"role": "user", "content": text})
        if stream:
            chunks = client.chat.completions.create(
                model="fake-model", messages=history, stream=True
            )
            reply = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            completion = client.chat.completions.create(model="fake-model", messages=history)
            reply = completion.choices[0].message.content
        history.append({"role": "assistant", "content": reply})
        replies.append(reply)
    return history, replies


def chat_bodies(upstream) -> list[dict]:
    return upstream.bodies("/chat/completions")


def close_idle_sessions() -> None:
    ChatSession.objects.filter(status="open").update(
        last_activity_at=timezone.now() - timedelta(days=1)
    )
    sessions_close_stale()


@pytest.mark.parametrize("embed_after_response", [False, True])
def test_memory_of_a_closed_conversation_reaches_the_next_one(
    live_url, user, upstream, settings, embed_after_response
):
    # Both ways of embedding the stored messages: in the request, or just after it
    # (ingestion_app.services.deferred_embeddings) in the server's own process.
    settings.MNEMO_EMBED_AFTER_RESPONSE = embed_after_response
    client = client_for(live_url, user)
    upstream.reply_text = "Noted, happy to help with that."
    history, _ = chat_like_an_app(
        client,
        [
            "My sister Anna lives in Lisbon and I visit her every summer.",
            "I am vegetarian, so restaurant tips should fit that.",
            "This year I want to take the night train from Madrid to Lisbon.",
        ],
    )
    sessions = ChatSession.objects.filter(user=user)
    assert sessions.count() == 1
    session = sessions.get()
    stored = list(Message.objects.filter(session=session).values_list("role", "content"))
    assert stored == [(m["role"], m["content"]) for m in history[1:]]

    assert pending_embeddings_wait(30)
    assert not MemoryItem.objects.filter(user=user, embedding__isnull=True).exists()
    close_idle_sessions()  # the stale-heartbeat path closes and summarizes the session
    session.refresh_from_db()
    assert session.status == "closed"

    upstream.requests.clear()
    chat_like_an_app(client, ["Where should I eat when I visit my sister?"], stream=True)
    sent = chat_bodies(upstream)[-1]
    memory = sent["messages"][0]
    assert memory["role"] == "system" and "Mnemo" in memory["content"]
    assert "Lisbon" in memory["content"]
    # The caller's own messages follow, unchanged.
    assert sent["messages"][1:] == [
        SYSTEM,
        {"role": "user", "content": "Where should I eat when I visit my sister?"},
    ]
    new_session = ChatSession.objects.filter(user=user, status="open").get()
    log = InjectionLog.objects.filter(session=new_session).latest("id")
    assert log.pack_text == memory["content"]


@pytest.mark.usefixtures("generous_budget")
def test_a_conversation_closed_over_http_reaches_the_next_one_started_at_once(
    live_url, user, upstream, settings, monkeypatch
):
    """No waiting in between, and vectors that take a while: ending the chat (chat/close) is
    the boundary the next chat's first pack waits for, so its last turn is already memory."""
    settings.MNEMO_EMBED_AFTER_RESPONSE = True
    real = deferred_embeddings.get_embedder()

    class SlowEmbedder:
        name = "remote"  # one call per batch

        def embed(self, texts):
            time.sleep(0.2)
            return real.embed(texts)

    monkeypatch.setattr(deferred_embeddings, "get_embedder", SlowEmbedder)
    # Memories only: the closed chat's summary would carry the fact too.
    pack_settings = ContextSettings.objects.get(pk=1)
    pack_settings.recent_cap_chars = pack_settings.history_cap_chars = 0
    pack_settings.topic_cap_chars = 0
    pack_settings.save()
    client = client_for(live_url, user)
    upstream.reply_text = "Noted."
    chat_like_an_app(
        client,
        ["Help me plan a trip.", "My passport number ends in 4471 and it expires in March."],
        stream=True,
    )
    session = ChatSession.objects.get(user=user)
    closed = httpx.post(
        f"{live_url}/api/v1/chat/close",
        json={"session_id": str(session.id)},
        headers={"Authorization": f"Token {token_for(user)}"},
    )
    assert closed.status_code == 202, closed.text

    upstream.requests.clear()
    chat_like_an_app(client, ["Does my passport number expire in March?"], stream=True)
    memory = chat_bodies(upstream)[-1]["messages"][0]
    assert memory["role"] == "system"
    assert "expires in March" in memory["content"].split("[Relevant memories]", 1)[1]


def test_a_conversation_resent_in_full_is_one_session_without_duplicates(live_url, user, upstream):
    client = client_for(live_url, user)
    turns = [f"Question number {i} about planning my garden." for i in range(5)]
    history, _ = chat_like_an_app(client, turns[:3], stream=True)
    # The same chat continues, non-streaming this time.
    history.append({"role": "user", "content": turns[3]})
    client.chat.completions.create(model="fake-model", messages=history)

    session = ChatSession.objects.get(user=user)
    roles = list(Message.objects.filter(session=session).values_list("role", flat=True))
    assert roles == ["user", "assistant"] * 4
    contents = list(
        Message.objects.filter(session=session, role="user").values_list("content", flat=True)
    )
    assert contents == turns[:4]
    assert UsageLog.objects.filter(user=user, session=session, kind="chat").count() == 4


def test_every_turn_records_its_pack_and_each_reply_names_it(live_url, user, upstream):
    """The injection log is written after the first token, yet each turn has its row, tied
    to the turn's question and named by its reply, and the next turn sees the last build."""
    client = client_for(live_url, user)
    history, _ = chat_like_an_app(
        client, ["I grow tomatoes on my balcony.", "What else fits a small balcony?"], stream=True
    )
    history.append({"role": "user", "content": "And which herbs?"})
    client.chat.completions.create(model="fake-model", messages=history)  # not streamed

    session = ChatSession.objects.get(user=user)
    logs = list(InjectionLog.objects.filter(session=session).order_by("id"))
    questions = Message.objects.filter(session=session, role="user").order_by("id")
    replies = Message.objects.filter(session=session, role="assistant").order_by("id")
    assert [log.user_message_id for log in logs] == [m.id for m in questions]
    assert [log.turn_number for log in logs] == [1, 2, 3]
    assert [m.metadata["injection_log_id"] for m in replies] == [log.id for log in logs]
    assert logs[0].status == "built"
    assert session.metadata["context"]["log_id"] in [log.id for log in logs]


def test_concurrent_calls_of_one_conversation_store_it_once(live_url, user, upstream):
    upstream.delay_seconds = 0.2
    client = client_for(live_url, user)
    messages = [SYSTEM, {"role": "user", "content": "Plan a weekend in Porto for me."}]
    errors = []

    def call():
        try:
            client.chat.completions.create(model="fake-model", messages=messages)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert ChatSession.objects.filter(user=user).count() == 1
    roles = list(Message.objects.filter(user=user).values_list("role", flat=True))
    assert roles == ["user", "assistant"]


def test_tool_call_round_trip_passes_tools_and_calls_through(live_url, user, upstream):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ]
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})},
    }

    def respond(body):
        if body["messages"][-1]["role"] == "tool":
            return {"content": "It is 4 degrees in Oslo."}
        return {"content": None, "tool_calls": [call]}

    upstream.message_responder = respond
    client = client_for(live_url, user)
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    first = client.chat.completions.create(
        model="fake-model", messages=messages, tools=tools, tool_choice="auto"
    )
    assert first.choices[0].finish_reason == "tool_calls"
    tool_call = first.choices[0].message.tool_calls[0]
    assert tool_call.function.name == "get_weather"
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": tool_call.id, "content": "4 degrees, cloudy"},
    ]
    chunks = client.chat.completions.create(
        model="fake-model", messages=messages, tools=tools, stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "It is 4 degrees in Oslo."
    )

    bodies = chat_bodies(upstream)
    assert bodies[0]["tools"] == tools and bodies[0]["tool_choice"] == "auto"
    assert bodies[1]["tools"] == tools
    assert bodies[1]["messages"][-2]["tool_calls"] == [call]
    assert bodies[1]["messages"][-1] == messages[-1]
    stored = list(Message.objects.filter(user=user).values_list("role", "content"))
    assert stored == [
        ("user", "What is the weather in Oslo?"),
        ("assistant", "It is 4 degrees in Oslo."),
    ]


def test_async_client_streams_with_usage_and_passes_response_format(live_url, user, upstream):
    upstream.json_responder = lambda body: {"answer": 42}
    api_key = token_for(user)

    async def run():
        client = openai.AsyncOpenAI(
            base_url=f"{live_url}/v1", api_key=api_key, max_retries=0, timeout=20
        )
        stream = await client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "Tell me a story about a lighthouse."}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        plain = await client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "Another story about a fox."}],
            stream=True,
        )
        plain_chunks = [chunk async for chunk in plain]
        structured = await client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "The answer as JSON."}],
            response_format={"type": "json_object"},
        )
        await client.close()
        return chunks, plain_chunks, structured

    chunks, plain_chunks, structured = asyncio.run(run())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == upstream.reply_text
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    assert all(chunk.usage is None for chunk in plain_chunks)
    assert json.loads(structured.choices[0].message.content) == {"answer": 42}
    assert chat_bodies(upstream)[-1]["response_format"] == {"type": "json_object"}
    assert structured.usage.total_tokens > 0


def test_a_cookie_the_upstream_sets_never_reaches_another_users_call(
    live_url, user, other_user, upstream
):
    upstream.set_cookie = "lb_session=user-one-affinity; Path=/"
    client_for(live_url, user).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "Hello there"}], stream=True
    )
    upstream.set_cookie = ""
    client_for(live_url, other_user).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "Hi, I am someone else"}]
    )

    calls = [r for r in upstream.requests if r["path"].endswith("/chat/completions")]
    assert len(calls) == 2
    assert calls[1]["cookie"] is None


def test_memory_off_header_and_explicit_session(live_url, user, other_user, upstream):
    client = client_for(live_url, user)
    session = open_session(user)
    client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "Remember that I like green tea."}],
        extra_headers={"X-Mnemo-Session-Id": str(session.id), "X-Mnemo-Memory": "off"},
    )
    assert chat_bodies(upstream)[-1]["messages"] == [
        {"role": "user", "content": "Remember that I like green tea."}
    ]
    assert Message.objects.filter(session=session).count() == 2

    other_session = open_session(other_user)
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"X-Mnemo-Session-Id": str(other_session.id)},
        )
    assert caught.value.body["code"] == "session_not_found"
    assert Message.objects.filter(session=other_session).count() == 0


def test_errors_have_openai_shape(live_url, user, upstream):
    bad = openai.OpenAI(base_url=f"{live_url}/v1", api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        bad.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["code"] == "invalid_api_key"
    assert set(caught.value.body) == {"message", "type", "param", "code"}

    client = client_for(live_url, user)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], n=2)
    assert caught.value.body["param"] == "n"
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "robot", "content": "x"}])
    assert caught.value.body["param"] == "messages[0].role"

    upstream.fail_count, upstream.fail_status = 1, 400
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"X-Mnemo-Memory": "off"},  # no embedding call before the upstream
        )
    assert "injected failure" in caught.value.body["message"]
    # The refused call opened its session: it is gone again (no session holding only "hi").
    assert not ChatSession.objects.filter(user=user, title="hi").exists()
    assert "X-Mnemo-Session-Id" not in caught.value.response.headers

    assert [m.id for m in client.models.list()] == upstream.models


def test_a_turn_is_answered_before_its_messages_are_embedded(live_url, user, upstream, settings):
    """The gateway runs the same after-message hook: its messages are stored in the call and
    embedded just after it by the server process's embedding thread."""
    from ingestion_app.services import deferred_embeddings
    from memory_site.providers import get_embedder

    settings.MNEMO_EMBED_AFTER_RESPONSE = True
    released = threading.Event()
    real = get_embedder()

    class HeldEmbedder:
        def embed(self, texts):
            released.wait(30)
            return real.embed(texts)

    original = deferred_embeddings.get_embedder
    deferred_embeddings.get_embedder = HeldEmbedder
    try:
        upstream.reply_text = "Lisbon's night train leaves Madrid at 21:43 on weekdays."
        chat_like_an_app(client_for(live_url, user), ["I take the night train to Lisbon in May."])
        items = MemoryItem.objects.filter(user=user, source="chunk")
        assert items.count() == 3 and not items.exclude(embedding=None).exists()
    finally:
        released.set()
        deferred_embeddings.get_embedder = original
    assert pending_embeddings_wait(30)
    assert not items.filter(embedding=None).exists()


def test_a_chat_apps_title_request_gets_no_pack_and_is_not_remembered(live_url, user, upstream):
    """Open WebUI asks its model for a chat title with a "### Task:" prompt that quotes the
    chat: the call is answered and logged, but given no pack, stored as no memory and left out
    of the session's summary."""
    client = client_for(live_url, user)
    upstream.reply_text = "Noted."
    chat_like_an_app(client, ["My sister Anna lives in Lisbon."])
    assert pending_embeddings_wait(30)
    items_before = set(MemoryItem.objects.filter(user=user).values_list("id", flat=True))
    upstream.reply_text = '{"title": "Sister in Lisbon"}'
    upstream.requests.clear()

    task = (
        "### Task:\nGenerate a concise, 3-5 word title for the chat.\n<chat_history>\n"
        "USER: My sister Anna lives in Lisbon.\nASSISTANT: Noted.\n</chat_history>"
    )
    completion = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": task}]
    )

    assert completion.choices[0].message.content == '{"title": "Sister in Lisbon"}'
    sent = chat_bodies(upstream)[-1]
    assert sent["messages"] == [{"role": "user", "content": task}]  # no pack prepended
    assert pending_embeddings_wait(30)
    assert set(MemoryItem.objects.filter(user=user).values_list("id", flat=True)) == items_before
    # Every task request of the user goes to one session, not one per request.
    client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "### Task:\nSuggest 3 tags."}]
    )
    tasks = ChatSession.objects.filter(user=user, title="Chat app tasks (not remembered)")
    assert tasks.count() == 1
    assert ChatSession.objects.filter(user=user).count() == 2  # the chat and the tasks


def test_a_stream_the_upstream_breaks_off_or_answers_whole_reaches_the_client_right(
    live_url, user, upstream
):
    client = client_for(live_url, user)
    question = [{"role": "user", "content": "Tell me about the night train to Lisbon."}]

    # Cut off after two words (no finish_reason, no [DONE]): an error frame, not a success.
    upstream.reply_text = "The train leaves Madrid at nine."
    upstream.stream_cut_after_words = 2
    received = []
    with pytest.raises(openai.APIError) as caught:
        for chunk in client.chat.completions.create(
            model="fake-model", messages=question, stream=True
        ):
            received.extend(c.delta.content or "" for c in chunk.choices)
    assert "ended before the reply was complete" in str(caught.value)
    assert "".join(received) == "The train"
    reply = Message.objects.filter(user=user, role="assistant").get()
    assert reply.content == "The train" and reply.incomplete
    assert pending_embeddings_wait(30)
    assert not MemoryItem.objects.filter(user=user, content__contains="The train").exists()

    # A whole JSON body to a streamed call: read as one chunk; an invalid body is a 502.
    upstream.stream_cut_after_words = 0
    upstream.stream_answer_body = json.dumps(
        {
            "id": "chatcmpl-whole",
            "object": "chat.completion",
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Nine."},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()
    again = [*question, {"role": "user", "content": "When does it leave?"}]
    chunks = list(client.chat.completions.create(model="fake-model", messages=again, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Nine."

    upstream.stream_answer_body = b"not json at all"
    with pytest.raises(openai.APIStatusError) as caught:
        list(
            client.chat.completions.create(
                model="fake-model",
                messages=[*again, {"role": "user", "content": "Ok?"}],
                stream=True,
            )
        )
    assert caught.value.status_code == 502
