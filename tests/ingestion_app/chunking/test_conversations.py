"""Turn pairs into chunks: merge/split rules, ids, skipped pairs, local headers, redaction."""

from __future__ import annotations

from ingestion_app.chunking.conversations import (
    MAX_CHUNK_WORDS,
    chunk_conversation,
    pair_key,
    redact_conversation,
)
from ingestion_app.chunking.markdown import (
    chunk_markdown,
)
from tests.ingestion_app.chunking.helpers import conversation_of, turn_ranges


def test_one_pair_per_chunk_by_default():
    conversation = conversation_of(
        [
            ("How does photosynthesis work?", "Light becomes sugar."),
            ("What is an ecosystem?", "A community of living things."),
            ("Explain plate tectonics", "Plates move on the mantle."),
        ]
    )

    assert turn_ranges(chunk_conversation(conversation)) == ["1", "2", "3"]


def test_continuations_and_clarifications_merge_into_the_previous_chunk():
    conversation = conversation_of(
        [
            ("Are ponds sentient?", "No, ponds are not sentient."),
            ("What about forests?", "Forests are not sentient either."),
            ("Write a limerick about frogs", "There once was a frog..."),
            ("continue", "...who sat on a log."),
            ("thanks!", "You're welcome!"),
            ("Explain tides", "The moon pulls the oceans."),
        ]
    )

    chunks = chunk_conversation(conversation)

    assert turn_ranges(chunks) == ["1-2", "3-5", "6"]
    merged = chunks[0]
    assert "What about forests?" in merged.exchange_markdown()
    assert merged.exchange_markdown().count("**User:**") == 2


def test_a_bare_ok_reply_is_kept_with_the_exchange_that_uses_it():
    conversation = conversation_of(
        [
            ("Study this text about big data. Reply OK when done.", "OK"),
            ("Now write three quiz questions on it", "1. What are the five Vs?"),
        ]
    )

    assert turn_ranges(chunk_conversation(conversation)) == ["1-2"]


def test_merging_stops_before_the_word_limit():
    long_answer = "word " * (MAX_CHUNK_WORDS - 50)
    conversation = conversation_of(
        [("Tell me everything", long_answer), ("continue", "more " * 100)]
    )

    assert turn_ranges(chunk_conversation(conversation)) == ["1", "2"]


def test_long_reply_with_separate_headed_topics_is_split_into_parts():
    sections = [f"## Topic {n}\n" + f"topic{n} detail " * 700 for n in range(1, 4)]
    conversation = conversation_of([("Give me three unrelated guides", "\n\n".join(sections))])

    chunks = chunk_conversation(conversation)

    assert [c.chunk_id.rsplit("-", 1)[-1] for c in chunks] == ["p1", "p2", "p3"]
    assert all(c.turn_range == "1" for c in chunks)
    assert all(c.word_count() < MAX_CHUNK_WORDS for c in chunks)
    assert "".join(c.assistant_text for c in chunks).count("## Topic") == 3
    assert len({c.chunk_id for c in chunks}) == 3


def test_long_reply_without_headings_is_not_split():
    conversation = conversation_of([("Essay please", "sentence " * (MAX_CHUNK_WORDS + 500))])

    assert len(chunk_conversation(conversation)) == 1


def test_every_pair_lands_in_exactly_one_chunk():
    exchanges = [(f"Question {n} about topic {n}?", f"Answer {n}.") for n in range(1, 30)]
    exchanges[4] = ("continue", "more")
    exchanges[9] = ("ok thanks", "welcome")
    chunks = chunk_conversation(conversation_of(exchanges))

    covered = [p.index for c in chunks for p in c.pairs]
    assert covered == list(range(1, 30))


def test_chunk_ids_are_stable_and_scoped_by_namespace():
    conversation = conversation_of([("q1 about cats", "a1"), ("q2 about dogs", "a2")])

    first = [c.chunk_id for c in chunk_conversation(conversation, namespace="alice")]
    again = [c.chunk_id for c in chunk_conversation(conversation, namespace="alice")]
    other = [c.chunk_id for c in chunk_conversation(conversation, namespace="bob")]

    assert first == again
    assert not set(first) & set(other)
    assert first[0].startswith("chatgpt-") and first[0].endswith("-1-20240313")


def test_already_stored_pairs_are_skipped_and_never_merged_with_new_ones():
    conversation = conversation_of(
        [("Are ponds sentient?", "No."), ("What about forests?", "No either.")]
    )
    stored = {pair_key(conversation.pairs[0])}

    chunks = chunk_conversation(conversation, skip_pair_keys=stored)

    assert turn_ranges(chunks) == ["2"]


def test_headers_are_specific_and_tags_are_one_to_three():
    conversation = conversation_of(
        [
            ("How do I configure pgvector HNSW indexes in Django?", "Use HnswIndex with ..."),
            ("Which opclass for cosine distance?", "vector_cosine_ops pairs with CosineDistance."),
        ]
    )

    chunks = chunk_conversation(conversation)

    for chunk in chunks:
        assert 1 <= len(chunk.topics) <= 3
        sentences = [s for s in chunk.header.replace("?", ".").split(". ") if s.strip()]
        assert 2 <= len(sentences) <= 5  # quoted prompts may contain a full stop
        assert "ChatGPT" in chunk.header and "2024-03-13" in chunk.header
        assert "Ponds and forests" in chunk.header
    assert "pgvector" in chunks[0].header.lower() or "hnsw" in chunks[0].header.lower()
    assert "Earlier in the conversation" in chunks[1].header


def test_embedding_text_excludes_the_reply():
    reply = "Around 75 percent works well. " * 5 + "Unrelated aside: zebras sleep standing up."
    conversation = conversation_of([("Best sourdough hydration?", reply)])

    [chunk] = chunk_conversation(conversation)

    assert chunk.embedding_text() == f"{chunk.header}\n\nBest sourdough hydration?"
    assert "Around 75 percent works well. Around 75" not in chunk.embedding_text()


def test_redaction_happens_before_headers_and_content():
    conversation = conversation_of(
        [("Mail jane.doe@example.com my key sk-proj-abcDEF1234567890abcdef", "Done, Jane.")]
    )

    [chunk] = chunk_conversation(redact_conversation(conversation))

    text = chunk_markdown(chunk)
    assert "jane.doe@example.com" not in text and "sk-proj-abc" not in text
    assert "[EMAIL]" in text
    assert conversation.pairs[0].user_text.startswith("Mail jane.doe")  # original untouched
