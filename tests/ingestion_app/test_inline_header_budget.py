"""With a model configured, the header is the model's when it answers within the budget;
otherwise a placeholder is stored at once and the model's header is backfilled by a task."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ingestion_app.models import MemoryItem
from ingestion_app.tasks import chunk_header_backfill_task
from memory_site.providers import get_embedder
from sessions_app.models import UsageLog
from tests.factories import add_message, open_session


def pair_chunks(user):
    """The turn-pair chunks (not the per-message items the message index also writes)."""
    return MemoryItem.objects.filter(user=user, source="chunk").exclude(
        metadata__contains={"granularity": "message"}
    )


pytestmark = pytest.mark.django_db

PROMPT = "How long should I rest a brisket after smoking it?"
REPLY = "Rest it wrapped for at least an hour, ideally two, in a cooler."
MODEL_HEADER = (
    "The user is smoking a brisket at home and asks about resting time. "
    "They want juicy slices and are planning the timing of a barbecue."
)


def header_responder(body):
    return {
        "chunks": [
            {
                "index": 0,
                "header": MODEL_HEADER,
                "topics": ["Brisket Smoking", "barbecue timing", "x" * 80, 7],
            }
        ]
    }


def cosine(a, b) -> float:
    return float(np.array(a) @ np.array(b))


def test_a_fast_model_header_is_used_directly(user, fake_openai):
    fake_openai.json_responder = header_responder
    session = open_session(user)
    add_message(session, "user", PROMPT)
    add_message(session, "assistant", REPLY)

    chunk = pair_chunks(user).get()
    assert chunk.header == MODEL_HEADER
    assert chunk.topics == ["brisket-smoking", "barbecue-timing", "x" * 40]
    assert chunk.metadata["header_status"] == "llm"
    expected = get_embedder().embed([f"{MODEL_HEADER}\n\n{PROMPT}"])[0]
    assert cosine(chunk.embedding, expected) > 0.999
    usage = UsageLog.objects.get(session=session, kind="header")
    assert usage.tokens_in > 0 and usage.tokens_out > 0
    # The model saw the redacted exchange and the header instruction.
    body = fake_openai.bodies("/chat/completions")[-1]
    assert PROMPT in body["messages"][1]["content"]


def test_a_slow_model_gets_a_placeholder_then_its_late_header_asked_once(
    user, fake_openai, settings, django_capture_on_commit_callbacks, monkeypatch
):
    from ingestion_app.services import inline

    fake_openai.json_responder = header_responder
    fake_openai.gate = threading.Event()  # the model answers only when released below
    settings.MNEMO_INLINE_HEADER_BUDGET_SECONDS = 0.2
    calls = []
    submit = inline._HEADER_POOL.submit

    def recorded(*args, **kwargs):
        calls.append(submit(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(inline._HEADER_POOL, "submit", recorded)
    session = open_session(user)
    add_message(session, "user", PROMPT)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        add_message(session, "assistant", REPLY)

    # The request returned while the model still held its answer: it did not wait for it.
    assert len(fake_openai.bodies("/chat/completions")) == 1
    assert fake_openai.answered == []
    chunk = pair_chunks(user).get()
    assert chunk.metadata["header_status"] == "pending"
    assert chunk.header and chunk.header != MODEL_HEADER  # the local placeholder
    # Indexed immediately, on the user prompt alone.
    assert cosine(chunk.embedding, get_embedder().embed([PROMPT])[0]) > 0.999
    assert len(callbacks) == 1

    fake_openai.gate.set()
    calls[0].result(timeout=10)  # the late answer has come
    callbacks[0]()  # after commit: the late answer is applied (here at once: it has come)

    chunk.refresh_from_db()
    assert chunk.header == MODEL_HEADER
    assert chunk.metadata["header_status"] == "llm"
    assert chunk.topics[:2] == ["brisket-smoking", "barbecue-timing"]
    assert chunk.metadata["topics"] == chunk.topics
    expected = get_embedder().embed([f"{MODEL_HEADER}\n\n{PROMPT}"])[0]
    assert cosine(chunk.embedding, expected) > 0.999
    # The model was asked once, and its usage is recorded once, with its output.
    assert len(fake_openai.bodies("/chat/completions")) == 1
    usage = UsageLog.objects.filter(session=session, kind="header")
    assert [row.tokens_out > 0 for row in usage] == [True]
    # The backfill task, if it ran anyway, changes nothing.
    assert chunk_header_backfill_task(chunk.id) == "noop"


def test_a_failing_model_keeps_the_local_header_as_final(
    user, fake_openai, django_capture_on_commit_callbacks
):
    fake_openai.json_responder = header_responder
    fake_openai.fail_count = 2  # the inline call and the backfill call
    session = open_session(user)
    add_message(session, "user", PROMPT)
    with django_capture_on_commit_callbacks(execute=True):
        add_message(session, "assistant", REPLY)

    chunk = pair_chunks(user).get()
    assert chunk.metadata["header_status"] == "local"
    assert "brisket" in chunk.header.lower()
    expected = get_embedder().embed([f"{chunk.header}\n\n{PROMPT}"])[0]
    assert cosine(chunk.embedding, expected) > 0.999


def test_a_late_header_lost_with_its_process_is_resumed_by_the_sweep(
    user, fake_openai, settings, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from ingestion_app.services.inline import chunk_headers_resume_stalled

    fake_openai.json_responder = header_responder
    fake_openai.gate = threading.Event()
    settings.MNEMO_INLINE_HEADER_BUDGET_SECONDS = 0.2
    session = open_session(user)
    add_message(session, "user", PROMPT)
    with django_capture_on_commit_callbacks(execute=False):
        add_message(session, "assistant", REPLY)  # its late answer's callback never runs
    fake_openai.gate.set()
    chunk = pair_chunks(user).get()
    assert chunk.metadata["header_status"] == "pending"

    assert chunk_headers_resume_stalled() == 0  # the call may still be running
    later = timezone.now() + timedelta(
        seconds=settings.LLM_TIMEOUT_SECONDS * (settings.LLM_MAX_RETRIES + 1) + 61
    )
    assert chunk_headers_resume_stalled(now=later) == 1  # queued, run inline in tests
    chunk.refresh_from_db()
    assert chunk.header == MODEL_HEADER and chunk.metadata["header_status"] == "llm"
    assert chunk_headers_resume_stalled(now=later) == 0
