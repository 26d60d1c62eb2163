"""Turn pairs -> chunks (merge/split, ids, headers), Markdown round trip, document chunking."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from ingestion_app.chunking.conversations import (
    MAX_CHUNK_WORDS,
    chunk_conversation,
    pair_key,
    redact_conversation,
)
from ingestion_app.chunking.documents import ChunkingOptions, chunk_document
from ingestion_app.chunking.markdown import (
    FRONTMATTER_FIELDS,
    chunk_filename,
    chunk_markdown,
    parse_markdown,
)
from ingestion_app.parsers.base import Conversation, TurnPair


def _conversation(exchanges: list[tuple[str, str]], **fields) -> Conversation:
    start = datetime(2024, 3, 13, 14, 0, tzinfo=UTC)
    pairs = [
        TurnPair(
            index=i,
            user_text=user,
            assistant_text=assistant,
            user_at=start.replace(minute=i),
            model="gpt-4o",
        )
        for i, (user, assistant) in enumerate(exchanges, start=1)
    ]
    defaults = dict(
        platform="chatgpt",
        format="chatgpt",
        conversation_id="conv-1",
        source_file="conversations.json",
        title="Ponds and forests",
        model="gpt-4o",
    )
    defaults.update(fields)
    return Conversation(pairs=pairs, **defaults)


def _ranges(chunks) -> list[str]:
    return [c.turn_range for c in chunks]


def test_one_pair_per_chunk_by_default():
    conversation = _conversation(
        [
            ("How does photosynthesis work?", "Light becomes sugar."),
            ("What is an ecosystem?", "A community of living things."),
            ("Explain plate tectonics", "Plates move on the mantle."),
        ]
    )

    assert _ranges(chunk_conversation(conversation)) == ["1", "2", "3"]


def test_continuations_and_clarifications_merge_into_the_previous_chunk():
    conversation = _conversation(
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

    assert _ranges(chunks) == ["1-2", "3-5", "6"]
    merged = chunks[0]
    assert "What about forests?" in merged.exchange_markdown()
    assert merged.exchange_markdown().count("**User:**") == 2


def test_a_bare_ok_reply_is_kept_with_the_exchange_that_uses_it():
    conversation = _conversation(
        [
            ("Study this text about big data. Reply OK when done.", "OK"),
            ("Now write three quiz questions on it", "1. What are the five Vs?"),
        ]
    )

    assert _ranges(chunk_conversation(conversation)) == ["1-2"]


def test_merging_stops_before_the_word_limit():
    long_answer = "word " * (MAX_CHUNK_WORDS - 50)
    conversation = _conversation([("Tell me everything", long_answer), ("continue", "more " * 100)])

    assert _ranges(chunk_conversation(conversation)) == ["1", "2"]


def test_long_reply_with_separate_headed_topics_is_split_into_parts():
    sections = [f"## Topic {n}\n" + f"topic{n} detail " * 700 for n in range(1, 4)]
    conversation = _conversation([("Give me three unrelated guides", "\n\n".join(sections))])

    chunks = chunk_conversation(conversation)

    assert [c.chunk_id.rsplit("-", 1)[-1] for c in chunks] == ["p1", "p2", "p3"]
    assert all(c.turn_range == "1" for c in chunks)
    assert all(c.word_count() < MAX_CHUNK_WORDS for c in chunks)
    assert "".join(c.assistant_text for c in chunks).count("## Topic") == 3
    assert len({c.chunk_id for c in chunks}) == 3


def test_long_reply_without_headings_is_not_split():
    conversation = _conversation([("Essay please", "sentence " * (MAX_CHUNK_WORDS + 500))])

    assert len(chunk_conversation(conversation)) == 1


def test_every_pair_lands_in_exactly_one_chunk():
    exchanges = [(f"Question {n} about topic {n}?", f"Answer {n}.") for n in range(1, 30)]
    exchanges[4] = ("continue", "more")
    exchanges[9] = ("ok thanks", "welcome")
    chunks = chunk_conversation(_conversation(exchanges))

    covered = [p.index for c in chunks for p in c.pairs]
    assert covered == list(range(1, 30))


def test_chunk_ids_are_stable_and_scoped_by_namespace():
    conversation = _conversation([("q1 about cats", "a1"), ("q2 about dogs", "a2")])

    first = [c.chunk_id for c in chunk_conversation(conversation, namespace="alice")]
    again = [c.chunk_id for c in chunk_conversation(conversation, namespace="alice")]
    other = [c.chunk_id for c in chunk_conversation(conversation, namespace="bob")]

    assert first == again
    assert not set(first) & set(other)
    assert first[0].startswith("chatgpt-") and first[0].endswith("-1-20240313")


def test_already_stored_pairs_are_skipped_and_never_merged_with_new_ones():
    conversation = _conversation(
        [("Are ponds sentient?", "No."), ("What about forests?", "No either.")]
    )
    stored = {pair_key(conversation.pairs[0])}

    chunks = chunk_conversation(conversation, skip_pair_keys=stored)

    assert _ranges(chunks) == ["2"]


def test_headers_are_specific_and_tags_are_one_to_three():
    conversation = _conversation(
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
    conversation = _conversation([("Best sourdough hydration?", reply)])

    [chunk] = chunk_conversation(conversation)

    assert chunk.embedding_text() == f"{chunk.header}\n\nBest sourdough hydration?"
    assert "Around 75 percent works well. Around 75" not in chunk.embedding_text()


def test_redaction_happens_before_headers_and_content():
    conversation = _conversation(
        [("Mail jane.doe@example.com my key sk-proj-abcDEF1234567890abcdef", "Done, Jane.")]
    )

    [chunk] = chunk_conversation(redact_conversation(conversation))

    text = chunk_markdown(chunk)
    assert "jane.doe@example.com" not in text and "sk-proj-abc" not in text
    assert "[EMAIL]" in text
    assert conversation.pairs[0].user_text.startswith("Mail jane.doe")  # original untouched


def test_markdown_round_trip_with_any_yaml_parser():
    conversation = _conversation(
        [("Qu'est-ce que c'est: «ça»? 日本語 — \"quotes\"", "C'est ça: 2024-03-13 #1")],
        title='Title: with "quotes" & colons',
        conversation_id="2024-03-13",
        model="123",
    )

    [chunk] = chunk_conversation(conversation)
    text = chunk_markdown(chunk)
    frontmatter, header, exchange = parse_markdown(text)

    assert frontmatter == chunk.frontmatter
    assert list(frontmatter) == list(FRONTMATTER_FIELDS)
    raw_yaml = text.split("---\n")[1]
    assert yaml.load(raw_yaml, Loader=yaml.SafeLoader) == chunk.frontmatter  # pure-Python parser
    assert isinstance(frontmatter["timestamp"], str) and frontmatter["timestamp"].endswith("Z")
    assert frontmatter["turn_range"] == "1" and frontmatter["model_used"] == "gpt-4o"
    assert frontmatter["agent_id"] == "external"
    assert header == chunk.header
    assert "日本語" in exchange and exchange.startswith("**User:**")


@pytest.mark.parametrize(
    "title",
    [
        "yes",
        "1e3",
        "2024-03-13",
        "key: value # not a comment",
        'quote " and \\ backslash',
        "line\u2028separator and next\x85line",
        "C1 control \x9c and BOM \ufeff",
        "  leading spaces",
        "- looks like a list",
        "[flow] {map} & *alias !tag %directive @at `tick`",
        "日本語 😀 Ünïcödé",
        "",
    ],
)
def test_frontmatter_survives_hostile_titles(title):
    conversation = _conversation([("q", "a")], title=title)

    [chunk] = chunk_conversation(conversation)
    frontmatter, _, _ = parse_markdown(chunk_markdown(chunk))

    assert frontmatter["conversation_title"] == title
    raw_yaml = chunk_markdown(chunk).split("---\n")[1]
    assert yaml.load(raw_yaml, Loader=yaml.SafeLoader) == chunk.frontmatter


def test_chunk_file_name_follows_the_reference_pattern():
    conversation = _conversation([("How do I switch models?", "Use the picker.")] * 4)
    chunks = chunk_conversation(conversation)

    name = chunk_filename(chunks[3].frontmatter)

    key = chunks[3].chunk_id.split("-")[1][:8]
    assert name.startswith(f"2024-03-13_14-04_session-{key}_pair-004_")
    assert name.endswith(".md")


# ---------------------------------------------------------------------------------- documents

DOCUMENT = (
    "Sourdough basics. A starter is flour and water fermented by wild yeast. "
    "Feed the starter daily with equal weights of flour and water.\n\n"
    "Baking day. Mix the dough, rest it, fold it, and shape it before the final proof. "
    "Bake in a hot Dutch oven for forty minutes.\n\n"
    "Tax filing. Freelancers in the Netherlands file VAT returns every quarter. "
    "Income tax is filed once a year before the first of May.\n\n"
    "Deductions. Keep receipts for equipment, because business costs lower the taxable income."
)


@pytest.mark.parametrize("strategy", ["paragraph", "sentence", "fixed", "semantic"])
def test_document_chunks_have_exact_offsets_and_respect_the_size(strategy):
    options = ChunkingOptions(strategy=strategy, max_chunk_size=200, min_chunk_size=40, overlap=20)

    chunks = chunk_document(DOCUMENT, options)

    assert len(chunks) >= 2
    for index, chunk in enumerate(chunks):
        assert DOCUMENT[chunk.start_offset : chunk.end_offset] == chunk.text
        assert chunk.index == index and chunk.total == len(chunks)
        assert chunk.strategy == strategy
        assert len(chunk.text) <= 200 + 20
    # nothing is lost: every word of the document is in some chunk
    covered = " ".join(c.text for c in chunks)
    assert all(word in covered for word in DOCUMENT.split())


def test_paragraph_strategy_cuts_at_blank_lines():
    options = ChunkingOptions(
        strategy="paragraph", max_chunk_size=200, min_chunk_size=10, overlap=0
    )

    chunks = chunk_document(DOCUMENT, options)

    assert [c.text.split(".")[0] for c in chunks] == [
        "Sourdough basics",
        "Baking day",
        "Tax filing",
        "Deductions",
    ]


def test_semantic_strategy_separates_the_baking_and_tax_topics():
    options = ChunkingOptions(
        strategy="semantic", max_chunk_size=1000, min_chunk_size=50, overlap=0
    )

    chunks = chunk_document(DOCUMENT, options)

    assert len(chunks) >= 2
    assert not any("starter" in c.text and "VAT" in c.text for c in chunks)


def test_overlap_repeats_the_end_of_the_previous_chunk():
    options = ChunkingOptions(strategy="fixed", max_chunk_size=120, min_chunk_size=10, overlap=30)

    chunks = chunk_document(DOCUMENT, options)

    for previous, current in zip(chunks, chunks[1:], strict=False):
        assert current.start_offset < previous.end_offset
        assert previous.end_offset - current.start_offset <= 30


def test_invalid_options_are_refused():
    with pytest.raises(ValueError, match="strategy"):
        ChunkingOptions(strategy="random")
    with pytest.raises(ValueError, match="overlap"):
        ChunkingOptions(max_chunk_size=100, overlap=100)
