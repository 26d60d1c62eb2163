"""The Markdown file of a chunk: YAML frontmatter round trip and the file name."""

from __future__ import annotations

import pytest
import yaml

from ingestion_app.chunking.conversations import (
    chunk_conversation,
)
from ingestion_app.chunking.markdown import (
    FRONTMATTER_FIELDS,
    chunk_filename,
    chunk_markdown,
    parse_markdown,
)
from tests.ingestion_app.chunking.helpers import conversation_of


def test_markdown_round_trip_with_any_yaml_parser():
    conversation = conversation_of(
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
    conversation = conversation_of([("q", "a")], title=title)

    [chunk] = chunk_conversation(conversation)
    frontmatter, _, _ = parse_markdown(chunk_markdown(chunk))

    assert frontmatter["conversation_title"] == title
    raw_yaml = chunk_markdown(chunk).split("---\n")[1]
    assert yaml.load(raw_yaml, Loader=yaml.SafeLoader) == chunk.frontmatter


def test_chunk_file_name_follows_the_reference_pattern():
    conversation = conversation_of([("How do I switch models?", "Use the picker.")] * 4)
    chunks = chunk_conversation(conversation)

    name = chunk_filename(chunks[3].frontmatter)

    key = chunks[3].chunk_id.split("-")[1][:8]
    assert name.startswith(f"2024-03-13_14-04_session-{key}_pair-004_")
    assert name.endswith(".md")
