"""Helpers for the chat-stream tests: SSE parsing and a stream call through the test client."""

from __future__ import annotations

import json
import warnings

import pytest

STREAM_URL = "/api/v1/ai/chat/stream"


@pytest.fixture
def generous_budget(db):
    """A build budget no busy test machine can miss (the production default is 300 ms).

    Tests that assert on a pack's content must not flake when other processes load the CPU;
    the budget itself is tested explicitly by the tests that lower it.
    """
    from context_app.models import ContextSettings

    ContextSettings.objects.update_or_create(pk=1, defaults={"latency_budget_ms": 5000})


def parse_sse(raw: bytes | str) -> tuple[list[tuple[str, dict]], list[str]]:
    """(events as (name, data), comment lines) of an SSE body, as an EventSource would see them."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    events: list[tuple[str, dict]] = []
    comments: list[str] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name, data_lines = "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                comments.append(line[1:].strip())
            elif line.startswith("event:"):
                name = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data_lines.append(line[len("data:") :].strip())
        if data_lines:
            events.append((name, json.loads("\n".join(data_lines))))
    return events, comments


def read_stream(response) -> bytes:
    """The whole body of a streaming test-client response (consumes the async iterator)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return b"".join(response)


def stream_turn(api, content: str, *, session_id=None, debug=False, history=None, **body):
    """POST one turn; returns (response, events, comments)."""
    payload = {"messages": [*(history or []), {"role": "user", "content": content}], **body}
    if session_id is not None:
        payload["session_id"] = str(session_id)
        payload.setdefault("context_version", "v2")
    headers = {"HTTP_X_REGGIE_CONTEXT": "preview"}
    if debug:
        headers["HTTP_X_REGGIE_CONTEXT_DEBUG"] = "1"
    response = api.post(STREAM_URL, payload, format="json", **headers)
    if not response.streaming:
        return response, [], []
    events, comments = parse_sse(read_stream(response))
    return response, events, comments


def event_names(events) -> list[str]:
    return [name for name, _ in events]


def reply_text(events) -> str:
    return "".join(data["chunk"] for name, data in events if name == "message")
