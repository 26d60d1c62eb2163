"""Every exchange becomes a turn-pair chunk in the request, retrievable before the next turn."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from pgvector.django import CosineDistance

from ingestion_app.chunking.markdown import FRONTMATTER_FIELDS
from ingestion_app.models import MemoryItem
from ingestion_app.services.inline import exchange_index
from memory_site.providers import get_embedder
from sessions_app.models import Message
from tests.factories import add_message, open_session


def pair_chunks(user):
    """The turn-pair chunks (not the per-message items the message index also writes)."""
    return MemoryItem.objects.filter(user=user, source="chunk").exclude(
        metadata__contains={"granularity": "message"}
    )


pytestmark = pytest.mark.django_db


def post_message(api, session_id, role, content):
    response = api.post(
        "/api/v1/chat/messages",
        {"session_id": session_id, "role": role, "content": content},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def nearest_chunks(user, text, k=3):
    vector = get_embedder().embed([text])[0]
    return list(pair_chunks(user).order_by(CosineDistance("embedding", vector))[:k])


def test_an_exchange_is_retrievable_by_vector_search_before_the_next_turn(api, user):
    session_id = api.post("/api/v1/chat/new", {"agent_id": ""}, format="json").json()["session_id"]
    exchanges = [
        ("How do I repot an orchid without damaging its roots?", "Soak the pot, then ease it out."),
        (
            "Which index fund has the lowest expense ratio?",
            "Broad total-market funds charge 0.03%.",
        ),
        ("My cat keeps scratching the sofa, what can I do?", "Offer a tall sisal scratching post."),
    ]
    for prompt, reply in exchanges:
        post_message(api, session_id, "user", prompt)
        post_message(api, session_id, "assistant", reply)

        # Before the next user message is even sent, the exchange is in the index.
        best = nearest_chunks(user, prompt.replace("?", "").lower())[0]
        assert prompt in best.content and reply in best.content

    best = nearest_chunks(user, "stop my kitten from clawing the couch")[0]
    assert "scratching the sofa" in best.content
    assert pair_chunks(user).count() == 3


def test_the_chunk_carries_the_reference_frontmatter_and_header(api, user):
    session_id = api.post("/api/v1/chat/new", {"title": "Garden"}, format="json").json()[
        "session_id"
    ]
    user_message = post_message(
        api, session_id, "user", "Why are the lower leaves of my tomato plants yellow?"
    )
    reply = post_message(
        api, session_id, "assistant", "Usually nitrogen deficiency; feed a balanced fertiliser."
    )

    chunk = pair_chunks(user).get()
    meta = chunk.metadata
    assert set(FRONTMATTER_FIELDS) <= set(meta)
    assert meta["source_platform"] == "local"
    assert meta["source_file"] == f"{session_id}.md"
    assert meta["turn_range"] == "1"
    assert meta["agent_id"] == "user"
    assert meta["conversation_title"] == "Garden"
    assert meta["chunk_id"] == chunk.chunk_id
    assert chunk.chunk_id.startswith("local-") and chunk.chunk_id.split("-")[2] == "1"
    stored_user = Message.objects.get(id=user_message["id"])
    assert datetime.fromisoformat(
        meta["timestamp"].replace("Z", "+00:00")
    ) == stored_user.created_at.replace(microsecond=0)
    assert 1 <= len(chunk.topics) <= 3 and chunk.topics == meta["topics"]
    assert "tomato" in " ".join(chunk.topics)
    sentences = [s for s in chunk.header.replace('?"', '"').split(". ") if s.strip()]
    assert 2 <= len(sentences) <= 4
    assert "tomato" in chunk.header.lower()
    assert chunk.source_message_ids == [user_message["id"], reply["id"]]
    assert chunk.occurred_at == stored_user.created_at
    assert chunk.chat_session_id is not None and str(chunk.chat_session_id) == session_id
    assert "**User:**" in chunk.content and "**Assistant:**" in chunk.content


def test_the_embedding_is_made_from_header_and_user_prompt_only(user):
    session = open_session(user)
    add_message(session, "user", "What is the capital of Australia?")
    add_message(
        session, "assistant", "Canberra. Many people guess Sydney, which is the largest city."
    )

    chunk = pair_chunks(user).get()
    expected = get_embedder().embed([f"{chunk.header}\n\nWhat is the capital of Australia?"])[0]
    with_reply = get_embedder().embed([chunk.header + "\n\n" + chunk.content])[0]
    stored = np.array(chunk.embedding)
    assert float(stored @ np.array(expected)) > 0.999
    assert float(stored @ np.array(with_reply)) < 0.999


def test_pairs_are_numbered_and_only_user_then_assistant_makes_a_chunk(user):
    session = open_session(user, agent_id="researcher")
    add_message(session, "assistant", "Hello! What shall we look into today?")  # no prompt before
    add_message(session, "user", "Compare solar and heat pumps for a small house.")
    add_message(session, "user", "Also mention the costs.")
    add_message(session, "assistant", "Heat pumps cut heating bills; solar offsets electricity.")
    add_message(session, "assistant", "(continued) Costs vary by region.")  # follows a reply
    add_message(session, "user", "Which one pays back faster?")
    reply = add_message(session, "assistant", "Usually the heat pump, if you heat with gas now.")

    chunks = list(pair_chunks(user).order_by("occurred_at"))
    assert [c.metadata["turn_range"] for c in chunks] == ["2", "3"]
    assert chunks[0].metadata["agent_id"] == "researcher"
    assert "Also mention the costs." in chunks[0].content
    assert "Earlier in the conversation" in chunks[1].header

    # The hook running again for the same reply (a redelivery) stores nothing new.
    assert exchange_index(message=reply).id == chunks[1].id
    assert pair_chunks(user).count() == 2


def test_only_redacted_text_is_indexed(user):
    session = open_session(user)
    add_message(
        session, "user", "Email my landlord at landlord.smith@example.com about the boiler."
    )
    add_message(
        session, "assistant", "Here is a draft for landlord.smith@example.com: the boiler ..."
    )

    chunk = pair_chunks(user).get()
    assert "landlord.smith@example.com" not in chunk.content
    assert "landlord.smith@example.com" not in chunk.header
    assert "boiler" in chunk.content


def test_historical_messages_keep_their_dates(user):
    session = open_session(user)
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    add_message(session, "user", "I adopted a greyhound named Pixel last week.", created_at=at)
    add_message(session, "assistant", "Congratulations on adopting Pixel!", created_at=at)

    chunk = pair_chunks(user).get()
    assert chunk.occurred_at == at
    assert chunk.metadata["timestamp"] == "2023-05-08T13:56:00Z"
    assert chunk.chunk_id.endswith("-1-20230508")
    assert "2023-05-08" in chunk.header
