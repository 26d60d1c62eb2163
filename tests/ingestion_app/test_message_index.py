"""Message items: every user/assistant message is retrievable on its own, right after it is
stored, with its neighbours indexed (not returned) for keyword search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ingestion_app.models import MemoryItem
from ingestion_app.services.message_index import message_index
from retrieval.search import memory_search
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db


def message_items(session):
    return list(
        MemoryItem.objects.filter(chat_session=session, metadata__granularity="message").order_by(
            "id"
        )
    )


def test_each_message_becomes_an_item_with_speaker_date_and_position(user, fake_embedder):
    session = open_session(user, project_id="garden", agent_id="helper")
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    first = add_message(session, "user", "I planted tomatoes today.", created_at=when)
    second = add_message(
        session, "assistant", "Cherry tomatoes grow well in pots.", created_at=when + timedelta(1)
    )

    items = message_items(session)

    assert [item.content for item in items] == [
        "User: I planted tomatoes today.",
        "Assistant: Cherry tomatoes grow well in pots.",
    ]
    first_item = items[0]
    assert first_item.source == MemoryItem.Source.CHUNK
    assert first_item.source_message_ids == [first.id]
    assert first_item.occurred_at == when
    assert first_item.header == "8 May 2023: User"
    assert first_item.embedding is not None
    assert first_item.embedding_text == "(8 May 2023) User: I planted tomatoes today."
    # A reply is embedded with the message it answers, after its own text.
    assert items[1].embedding_text == (
        "(9 May 2023) Assistant: Cherry tomatoes grow well in pots.\n"
        "User: I planted tomatoes today."
    )
    assert (first_item.project_id, first_item.agent_id) == ("garden", "helper")
    assert first_item.metadata["speaker"] == "user"
    assert [item.metadata["position"] for item in items] == [0, 1]
    assert items[1].metadata["message_id"] == second.id
    assert first_item.token_count > 0


def test_named_speaker_from_message_metadata(user, fake_embedder):
    session = open_session(user)
    add_message(session, "user", "I went to a support group.", metadata={"speaker": "Caroline"})

    (item,) = message_items(session)

    assert item.content == "Caroline: I went to a support group."
    assert item.metadata["speaker"] == "Caroline"


def test_system_and_blank_messages_are_not_indexed(user, fake_embedder):
    session = open_session(user)
    add_message(session, "system", "You are a helpful assistant.")
    add_message(session, "user", "   ")

    assert message_items(session) == []


def test_neighbours_are_keyword_context_two_on_each_side(user, fake_embedder):
    session = open_session(user)
    texts = ["alpha one", "bravo two", "charlie three", "delta four", "echo five", "foxtrot six"]
    for index, text in enumerate(texts):
        add_message(session, "user" if index % 2 == 0 else "assistant", text)

    contexts = [item.keyword_context for item in message_items(session)]

    # The middle item sees two before and two after; nothing of its own text, nothing further.
    assert contexts[2].splitlines() == [
        "User: alpha one",
        "Assistant: bravo two",
        "Assistant: delta four",
        "User: echo five",
    ]
    assert contexts[0].splitlines() == ["Assistant: bravo two", "User: charlie three"]
    assert contexts[5].splitlines() == ["Assistant: delta four", "User: echo five"]


def test_a_neighbours_words_find_the_message_but_are_not_returned(user, fake_embedder):
    session = open_session(user)
    add_message(session, "user", "Tell me how the Zanzibar trip went, I planned it for you.")
    add_message(session, "assistant", "It was the best holiday of my life.")
    add_message(session, "user", "Glad to hear it.")

    result = memory_search(
        user=user, query="zanzibar holiday", mode="keyword", sources=["chunk"], top_k=5
    )

    # The reply is found (it may share its slot with the prompt of its exchange, a line each)
    # and its own text is shown without the neighbour's words it was indexed with.
    lines = [line for hit in result.items for line in hit.content.splitlines()]
    assert "Assistant: It was the best holiday of my life." in lines
    assert not any("Zanzibar" in line for line in lines if line.startswith("Assistant:"))


def test_only_redacted_text_is_indexed(user, fake_embedder):
    session = open_session(user)
    add_message(session, "user", "Mail me at jane.doe@example.com about the invoice.")
    add_message(session, "assistant", "Sure, I will write to you.")

    items = message_items(session)
    stored = " ".join(
        f"{item.content} {item.keyword_context} {item.embedding_text}" for item in items
    )
    assert "jane.doe@example.com" not in stored
    assert "invoice" in items[0].content
    sent = fake_embedder.all_text_sent()
    assert "jane.doe@example.com" not in sent


def test_hook_is_idempotent(user, fake_embedder):
    session = open_session(user)
    message = add_message(session, "user", "Remember that my cat is called Pixel.")

    again = message_index(message=message)

    assert [item.id for item in message_items(session)] == [item.id for item in again]


def test_turn_pair_chunk_and_message_items_both_written(user, fake_embedder):
    session = open_session(user)
    prompt = add_message(session, "user", "I want to prune my roses this weekend.")
    reply = add_message(session, "assistant", "Cut just above an outward-facing bud.")

    chunks = MemoryItem.objects.filter(chat_session=session, source="chunk")
    pair = chunks.get(metadata__kind="turn_pair")
    assert pair.source_message_ids == [prompt.id, reply.id]
    assert chunks.filter(metadata__granularity="message").count() == 2


def test_embedder_failure_keeps_the_message_searchable(user, fake_embedder):
    session = open_session(user)
    fake_embedder.fail_count = 10
    add_message(session, "user", "My passport number ends with the Kilimanjaro sticker.")
    fake_embedder.fail_count = 0

    (item,) = message_items(session)
    assert item.embedding is None
    result = memory_search(user=user, query="Kilimanjaro", mode="keyword")
    assert [hit.id for hit in result.items] == [item.id]


def test_a_reply_and_its_exchange_are_embedded_in_one_embedder_call(user, fake_embedder):
    session = open_session(user)
    add_message(session, "user", "Which rootstock suits a dwarf apple tree?")
    calls_before = len(fake_embedder.bodies("/embeddings"))
    add_message(session, "assistant", "M9 keeps an apple tree under three metres.")

    calls = fake_embedder.bodies("/embeddings")[calls_before:]
    assert len(calls) == 1 and len(calls[0]["input"]) == 2
    pair = MemoryItem.objects.get(chat_session=session, metadata__kind="turn_pair")
    reply_item = message_items(session)[-1]
    assert sorted(calls[0]["input"]) == sorted([pair.embedding_text, reply_item.embedding_text])
    assert pair.embedding is not None and reply_item.embedding is not None
    hit = memory_search(user=user, query="M9 rootstock dwarf apple", mode="semantic").items[0]
    assert hit.id in {pair.id, reply_item.id}


def test_embedder_failure_after_a_reply_keeps_both_items(
    user, fake_embedder, django_capture_on_commit_callbacks
):
    session = open_session(user)
    add_message(session, "user", "Where did I leave the Zanzibar spice box?")
    fake_embedder.fail_count = 10
    with django_capture_on_commit_callbacks() as callbacks:
        add_message(session, "assistant", "You said it was on the Zanzibar shelf in the pantry.")
    fake_embedder.fail_count = 0

    pair = MemoryItem.objects.get(chat_session=session, metadata__kind="turn_pair")
    reply_item = message_items(session)[-1]
    assert pair.embedding is None and reply_item.embedding is None
    result = memory_search(user=user, query="Zanzibar pantry shelf", mode="keyword")
    assert reply_item.id in {hit.id for hit in result.items}
    # The chunk's backfill task, queued on commit, embeds it once the embedder is back.
    for callback in callbacks:
        callback()
    pair.refresh_from_db()
    assert pair.embedding is not None
