"""Contextual headers: what orients a model reading an imported chunk out of context."""

from __future__ import annotations

import re

from mnemo_text.headers import contextual_header
from tests.mnemo_text.samples import (
    BERLIN_CHAT,
    JAPAN_ASSISTANT,
    JAPAN_USER,
)


def test_header_names_topic_intent_platform_and_date():
    header = contextual_header(
        user_text=BERLIN_CHAT[2][1],
        assistant_text=BERLIN_CHAT[3][1],
        title="Moving to Berlin",
        prior="- The user moved to Berlin last month.",
        platform="chatgpt",
        date="2024-03-05T10:00:00Z",
    )

    sentences = re.findall(r"[^.?!]+(?:[.?!]\"?|$)", header.replace('."', '".'))
    assert 2 <= len([s for s in sentences if s.strip()]) <= 4
    assert "2024-03-05" in header and "ChatGPT" in header
    assert "anmeldung" in header.lower()  # the topic
    assert "How do I book an appointment for the Anmeldung?" in header  # the intent
    assert "moved to Berlin" in header  # the prior context
    assert "this chunk discusses" not in header.lower()


def test_header_uses_given_topics_and_is_specific_even_without_metadata():
    header = contextual_header(
        user_text=JAPAN_USER, assistant_text=JAPAN_ASSISTANT, topics=["japan-rail-pass"]
    )

    assert header.startswith("Conversation about japan rail pass.")
    assert "Kyoto" in header or "kyoto" in header
    assert header.count(". ") + 1 <= 5


def test_header_without_text_still_has_two_sentences():
    header = contextual_header(user_text="", assistant_text="", date="2024-01-01")

    assert "2024-01-01" in header
    assert len(re.findall(r"[.?!](?:\s|$)", header)) >= 2
