"""The chat stream served by the real ASGI app (uvicorn on loopback): incremental delivery and
what happens when the client goes away mid-reply."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from rest_framework.authtoken.models import Token

from sessions_app.models import Message, UsageLog
from tests.context_app.stream_helpers import STREAM_URL, generous_budget, parse_sse  # noqa: F401
from tests.factories import open_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("generous_budget")]


def auth_headers(user) -> dict:
    token, _ = Token.objects.get_or_create(user=user)
    return {"Authorization": f"Token {token.key}", "Accept": "text/event-stream"}


def test_chunks_arrive_while_the_model_is_still_writing(live_url, user, fake_openai_embeddings):
    fake_openai = fake_openai_embeddings
    fake_openai.reply_text = "one two three four five six"
    # The model writes three words, then waits until the client has seen a frame.
    fake_openai.stream_gate = threading.Event()
    fake_openai.stream_gate_after_words = 3
    session = open_session(user)
    body = {
        "session_id": str(session.id),
        "context_version": "v2",
        "messages": [{"role": "user", "content": "Count."}],
    }

    model_was_writing_at_first_frame = None
    raw = b""
    with httpx.stream(
        "POST", live_url + STREAM_URL, json=body, headers=auth_headers(user), timeout=20
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        for piece in response.iter_raw():
            raw += piece
            if b"event: message" in raw and model_was_writing_at_first_frame is None:
                model_was_writing_at_first_frame = fake_openai.stream_gate_released is None
                fake_openai.stream_gate.set()
    events, _ = parse_sse(raw)
    assert [name for name, _ in events] == ["message"] * 6 + ["done"]
    # The first words reached the client while the model was still held mid-reply (a buffered
    # stream would deliver nothing until the model's 30 s wait ran out).
    assert model_was_writing_at_first_frame is True
    assert fake_openai.stream_gate_released is True
    assert (
        Message.objects.get(role="assistant", session=session).content
        == "one two three four five six"
    )


def test_client_disconnect_stores_the_partial_reply(live_url, user, fake_openai_embeddings):
    fake_openai = fake_openai_embeddings
    words = [f"word{index}" for index in range(40)]
    fake_openai.reply_text = " ".join(words)
    fake_openai.stream_delay_seconds = 0.1
    session = open_session(user)
    body = {"session_id": str(session.id), "messages": [{"role": "user", "content": "Talk a lot."}]}

    received = ""
    with httpx.stream(
        "POST", live_url + STREAM_URL, json=body, headers=auth_headers(user), timeout=20
    ) as response:
        assert response.status_code == 200
        buffer = ""
        for text in response.iter_text():
            buffer += text
            events, _ = parse_sse(buffer.rsplit("\n\n", 1)[0])
            chunks = [data["chunk"] for name, data in events if name == "message"]
            if len(chunks) >= 3:
                received = "".join(chunks)
                break
    # Leaving the block closed the connection mid-reply.

    deadline = time.monotonic() + 10
    reply = None
    while time.monotonic() < deadline:
        reply = Message.objects.filter(session=session, role="assistant").first()
        if reply is not None:
            break
        time.sleep(0.1)
    assert reply is not None, "the partial reply was not stored"
    assert reply.incomplete is True
    assert reply.content.startswith(received)
    assert len(reply.content.split()) < len(words)
    assert reply.metadata["finish"] == "disconnected"
    assert Message.objects.filter(session=session, role="user").count() == 1
    assert UsageLog.objects.filter(user=user, kind="chat", session=session).count() == 1
