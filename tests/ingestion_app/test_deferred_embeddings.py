"""MNEMO_EMBED_AFTER_RESPONSE: a message's items are stored (keyword-searchable) in the request
and embedded right after it by the process's embedding thread; the one-minute schedule embeds
whatever that thread could not (process died, embedder failed).

These tests commit (transactional_db): on-commit work never runs inside a test's transaction.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from ingestion_app.models import MemoryItem
from ingestion_app.services import deferred_embeddings
from ingestion_app.services.deferred_embeddings import (
    EmbeddingJob,
    memory_items_embedding_fill,
    pending_embeddings_wait,
)
from ingestion_app.tasks import embed_missing_task
from memory_site.providers import ProviderError, get_embedder
from retrieval.search import memory_search
from sessions_app.models import Message
from tests.context_app.stream_helpers import generous_budget, stream_turn  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("generous_budget")]

PROMPT = "My moth orchid's aerial roots are crowding its pot, so I will repot it this weekend."
REPLY = (
    "Soak the bark first so the roots loosen, then ease the plant out and trim only the "
    "mushy roots before settling it in fresh orchid bark."
)


@pytest.fixture(autouse=True)
def embed_after_response(settings):
    settings.MNEMO_EMBED_AFTER_RESPONSE = True
    yield
    # Nothing of this test may still be embedding when the next one flushes the tables.
    assert pending_embeddings_wait(30)


class HeldEmbedder:
    """The configured embedder, held back until `release()` (or failing, with `fail`)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.inner = get_embedder()
        self.released = threading.Event()
        self.fail = fail
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        self.released.wait(30)
        if self.fail:
            raise ProviderError("embedder down")
        return self.inner.embed(texts)

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def held(monkeypatch):
    embedder = HeldEmbedder()
    monkeypatch.setattr(deferred_embeddings, "get_embedder", lambda: embedder)
    yield embedder
    embedder.release()


def post_exchange(api, prompt=PROMPT, reply=REPLY) -> str:
    session_id = api.post("/api/v1/chat/new", {"title": "Plants"}, format="json").json()[
        "session_id"
    ]
    for role, content in (("user", prompt), ("assistant", reply)):
        response = api.post(
            "/api/v1/chat/messages",
            {"session_id": session_id, "role": role, "content": content},
            format="json",
        )
        assert response.status_code == 201, response.content
    return session_id


def found(user, query: str, mode: str) -> list[MemoryItem]:
    hits = memory_search(user=user, query=query, mode=mode, min_relevance=0.0).items
    return list(MemoryItem.objects.filter(id__in=[hit.id for hit in hits]))


def test_a_reply_is_answered_before_its_vectors_and_they_arrive_right_after(api, user, held):
    post_exchange(api)

    # The request has returned; the embedder has not answered yet.
    items = MemoryItem.objects.filter(user=user, source="chunk")
    kinds = {(item.metadata.get("kind"), item.metadata.get("role")) for item in items}
    assert kinds == {("turn_pair", None), (None, "user"), (None, "assistant")}
    assert all(item.embedding is None for item in items)
    assert {item.id for item in found(user, "orchid aerial roots", "keyword")} & {
        item.id for item in items
    }
    assert found(user, "repotting a moth orchid", "semantic") == []
    assert held.calls, "the reply's items were queued for the embedding thread"

    held.release()
    assert pending_embeddings_wait(30)

    assert all(item.embedding is not None for item in items.all())
    semantic = found(user, "how to move an orchid to a new pot", "semantic")
    assert {item.id for item in semantic} & {item.id for item in items}
    # The one embedder call after the reply covered the reply's items together.
    assert any(len(texts) >= 2 for texts in held.calls)


def test_the_embedding_thread_never_overwrites_an_item_edited_or_deleted_meanwhile(api, user, held):
    post_exchange(api)
    items = list(MemoryItem.objects.filter(user=user, source="chunk").order_by("id"))
    edited, deleted, untouched = items
    MemoryItem.objects.filter(id=edited.id).update(
        content="Edited by the user.", content_hash="edited", embedding_text="Edited by the user."
    )
    MemoryItem.objects.filter(id=deleted.id).delete()

    held.release()
    assert pending_embeddings_wait(30)

    assert MemoryItem.objects.get(id=edited.id).embedding is None
    assert not MemoryItem.objects.filter(id=deleted.id).exists()
    assert MemoryItem.objects.get(id=untouched.id).embedding is not None
    # An item embedded meanwhile (a reembed) keeps its vector too.
    vector = MemoryItem.objects.get(id=untouched.id).embedding
    assert memory_items_embedding_fill([EmbeddingJob.of(untouched)]) == 0
    assert list(MemoryItem.objects.get(id=untouched.id).embedding) == list(vector)


def test_an_embedder_failure_leaves_items_findable_and_the_schedule_embeds_them(
    api, user, monkeypatch
):
    failing = HeldEmbedder(fail=True)
    failing.release()
    monkeypatch.setattr(deferred_embeddings, "get_embedder", lambda: failing)
    post_exchange(api)
    assert pending_embeddings_wait(30)

    items = MemoryItem.objects.filter(user=user, source="chunk")
    assert items.count() == 3 and all(item.embedding is None for item in items)
    assert found(user, "orchid aerial roots", "keyword")

    monkeypatch.setattr(deferred_embeddings, "get_embedder", get_embedder)
    # Within the grace period the schedule leaves them to the thread that queued them.
    assert embed_missing_task() == 0
    items.update(created_at=timezone.now() - timedelta(minutes=2))
    assert embed_missing_task() == 3
    assert all(item.embedding is not None for item in items.all())
    semantic = found(user, "how to move an orchid to a new pot", "semantic")
    assert {item.id for item in semantic} & {item.id for item in items}
    assert embed_missing_task() == 0  # idempotent


def test_a_user_message_takes_the_same_route(api, user, held):
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    response = api.post(
        "/api/v1/chat/messages",
        {"session_id": session_id, "role": "user", "content": "My sister Anna lives in Lisbon."},
        format="json",
    )
    assert response.status_code == 201
    item = MemoryItem.objects.get(user=user, metadata__message_id=response.json()["id"])
    assert item.embedding is None

    held.release()
    assert pending_embeddings_wait(30)
    item.refresh_from_db()
    assert item.embedding is not None


def test_off_embeds_in_the_request(api, user, settings, held):
    settings.MNEMO_EMBED_AFTER_RESPONSE = False
    post_exchange(api)

    items = MemoryItem.objects.filter(user=user, source="chunk")
    assert items.count() == 3 and all(item.embedding is not None for item in items)
    assert held.calls == []


def test_a_fact_said_just_before_ending_a_chat_is_in_the_first_pack_of_the_next(api, user, held):
    ended = post_exchange(
        api,
        prompt="I am allergic to peanuts, keep that in mind for recipes.",
        reply="Noted: no peanuts in any recipe I suggest.",
    )
    assert MemoryItem.objects.filter(user=user, embedding__isnull=True).exists()
    # "New chat" ending the previous one, as the chat page does.
    new_session = api.post("/api/v1/chat/new", {"close_session_id": ended}, format="json").json()[
        "session_id"
    ]

    # The embedder answers while the pack is being built: the pack waits for it.
    threading.Timer(0.05, held.release).start()
    _, events, _ = stream_turn(
        api, "am I allergic to peanuts at all", session_id=new_session, debug=True
    )
    context = next(data for name, data in events if name == "context")
    assert "allergic to peanuts" in context["pack"]

    assert pending_embeddings_wait(30)
    session_messages = Message.objects.filter(session_id=new_session)
    assert session_messages.filter(role="assistant").exists()
    # The stream's own messages took the same route and have their vectors now.
    assert not MemoryItem.objects.filter(user=user, source="chunk", embedding__isnull=True).exists()


def test_the_next_turn_of_a_chat_never_waits_for_its_own_last_reply(api, user, held):
    """The pack leaves the chat's own items out of its search, so a chat app's back-to-back
    turn does not wait for them; another chat of the same user does (read your own writes)."""
    session_id = post_exchange(api)  # its vectors are held back

    started = time.monotonic()
    assert pending_embeddings_wait(5, user_id=user.id, except_session_id=session_id)
    assert time.monotonic() - started < 1
    assert not pending_embeddings_wait(0.2, user_id=user.id)  # another chat would wait
    held.release()
    assert pending_embeddings_wait(30, user_id=user.id)


def test_a_chat_still_open_does_not_hold_up_the_first_pack_of_another(api, user, held):
    """A chat app's next conversation may start a moment after the last reply of one it never
    ends: its first pack is built without waiting for that reply's vectors. The statement is
    already found by its words (the pack's hybrid search), and by meaning once embedded."""
    post_exchange(
        api,
        prompt="I am allergic to peanuts, keep that in mind for recipes.",
        reply="Noted: no peanuts in any recipe I suggest.",
    )
    new_session = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]

    started = time.monotonic()
    _, events, _ = stream_turn(
        api, "am I allergic to peanuts at all", session_id=new_session, debug=True
    )
    assert time.monotonic() - started < 5  # the embedder is held for 30 s
    context = next(data for name, data in events if name == "context")
    assert "allergic to peanuts" in context["pack"]
    assert MemoryItem.objects.filter(user=user, embedding__isnull=True).exists()

    held.release()
    assert pending_embeddings_wait(30)
    _, events, _ = stream_turn(api, "am I allergic to peanuts", session_id=new_session, debug=True)
    context = next(data for name, data in events if name == "context")
    assert "allergic to peanuts" in context["pack"]


def test_the_thread_holds_back_while_a_reply_starts_and_a_waiting_read_lifts_it(
    api, user, monkeypatch
):
    monkeypatch.setattr(deferred_embeddings, "HOLD_MAX_SECONDS", 30)
    hold = deferred_embeddings.embeddings_hold()
    try:
        post_exchange(api)
        # Held: nothing embedded while the hold lasts.
        time.sleep(0.5)
        assert not MemoryItem.objects.filter(user=user, embedding__isnull=False).exists()
        hold.release()
        assert pending_embeddings_wait(30)
        assert not MemoryItem.objects.filter(user=user, embedding__isnull=True).exists()

        # A read waiting for the user's vectors gets them although a reply is starting.
        with deferred_embeddings.embeddings_hold():
            post_exchange(api, prompt="I keep bees on the roof of my building.")
            assert pending_embeddings_wait(10, user_id=user.id)
    finally:
        hold.release()


def test_a_hold_dropped_without_release_lets_go():
    """A stream the server never started (its client left first) drops its hold: the thread
    must not stay held back for good."""
    held_before = deferred_embeddings._BACKLOG.holds
    hold = deferred_embeddings.embeddings_hold()
    assert deferred_embeddings._BACKLOG.holds == held_before + 1
    del hold
    assert deferred_embeddings._BACKLOG.holds == held_before
