"""Offline summaries, titles and topics a person would write, for chats shaped like the shared
export samples (ChatGPT mapping tree, Claude chat_messages, Gemini Takeout HTML replies).

The fixtures are small synthetic exports written from the documented formats; they carry what
the real files carry: HTML replies, pasted markup outside code fences, five stated facts.
"""

from __future__ import annotations

import re

import pytest

from context_app.services.summaries import session_tags
from ingestion_app.chunking import chunk_conversation, local_tags
from ingestion_app.parsers import parse_file
from mnemo_text.keywords import tags, title
from mnemo_text.summaries import summarize
from mnemo_text.words import CODE_TOKENS
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    claude_conversation,
    gemini_record,
    write_json,
)

FIVE_FACTS = [
    (
        "Hi! I live in Utrecht with my partner Sam.",
        "Nice to meet you. <b>Utrecht</b> is a lovely city.",
    ),
    (
        "I'm allergic to peanuts, so restaurant tips must avoid them.",
        '<div class="answer"><span>Noted</span>, I will avoid peanut dishes.</div>',
    ),
    ("My sister Anna is getting married in June in Lisbon.", "Congratulations to Anna!"),
    ("I work as a nurse at the UMC hospital.", "That is demanding work."),
    (
        "We are planning a trip to Japan in October. What should we pack?",
        '<p class="tip">Pack light layers and a rain jacket for <span>October</span>.</p>',
    ),
]
# One distinctive word per stated fact; every one must survive into the summary.
FACT_WORDS = ["Utrecht", "peanuts", "Anna", "nurse", "Japan"]

PASTED_MARKUP = [
    (
        'Why does <div class="card"><span class="title">Menu</span></div> not center in the '
        "flexbox layout? The div with class card stays left.",
        'Give the container <code>display: flex</code> and <span class="hl">justify-content: '
        "center</span>; the flexbox layout then centers the card.",
    ),
    (
        "My flexbox layout still breaks: <span style='margin:auto'>x</span> and "
        '<a href="/menu">Menu</a>.',
        "<ul><li>Check the parent's width.</li><li>Remove the float on the card.</li></ul>",
    ),
]

GEMINI_REPLIES = [
    (
        "I grow tomatoes on my balcony in Rotterdam.",
        '<div class="markdown"><p>Tomatoes love <b>sun</b>; water them in the morning.</p></div>',
    ),
    (
        "How often should tomatoes get fertilizer?",
        "<p>Every two weeks once the first <span>tomatoes</span> appear.</p>",
    ),
]


def _conversations(tmp_path, file_name, data):
    return list(parse_file(write_json(tmp_path / file_name, data)))


@pytest.fixture
def exports(tmp_path):
    """One parsed conversation per export shape: {name: Conversation}."""
    chatgpt = _conversations(
        tmp_path,
        "conversations.json",
        [
            chatgpt_linear("Personal notes", FIVE_FACTS),
            chatgpt_linear("Layout help", PASTED_MARKUP, conversation_id="layout"),
        ],
    )
    claude_messages = [
        (sender, text)
        for user_text, reply in PASTED_MARKUP
        for sender, text in (("human", user_text), ("assistant", reply))
    ]
    claude = _conversations(
        tmp_path, "claude.json", [claude_conversation("Centering", claude_messages)]
    )
    gemini = _conversations(
        tmp_path,
        "MyActivity.json",
        [
            gemini_record(prompt, reply, f"2024-05-0{number}T10:00:00.000Z")
            for number, (prompt, reply) in enumerate(reversed(GEMINI_REPLIES), start=1)
        ],
    )
    return {
        "chatgpt_facts": chatgpt[0],
        "chatgpt_markup": chatgpt[1],
        "claude_markup": claude[0],
        "gemini": gemini[0],
    }


def _turns(conversation):
    turns = []
    for pair in conversation.pairs:
        turns += [("user", pair.user_text), ("assistant", pair.assistant_text)]
    return turns


def _user_texts(conversation):
    return [pair.user_text for pair in conversation.pairs]


def _words(phrases):
    return {word for phrase in phrases for word in re.split(r"[-\s]+", phrase.lower()) if word}


def test_summary_of_a_short_chat_keeps_every_stated_fact_in_the_third_person(exports):
    summary = summarize(_turns(exports["chatgpt_facts"]))

    for word in FACT_WORDS:
        assert word in summary, (word, summary)
    lines = summary.splitlines()
    assert all(line.startswith("- ") for line in lines)
    assert "- The user said they are planning a trip to Japan in October." in lines
    assert "- The user's sister Anna is getting married in June in Lisbon." in lines
    assert not re.search(r"\b(?:I|I'm|my|we)\b", summary)
    assert not re.search(r"User (?:asked|requested)|^- User:", summary, re.M)
    assert "What should we pack" not in summary


@pytest.mark.parametrize("name", ["chatgpt_facts", "chatgpt_markup", "claude_markup", "gemini"])
def test_summaries_carry_no_markup_and_no_user_asked_lines(exports, name):
    summary = summarize(_turns(exports[name]))

    assert summary
    assert not re.search(r"</?\w+[^>]*>|class=|&\w+;", summary), summary
    assert "User asked" not in summary and "User requested" not in summary


@pytest.mark.parametrize("name", ["chatgpt_facts", "chatgpt_markup", "claude_markup", "gemini"])
def test_topics_and_titles_hold_no_markup_or_code_tokens(exports, name):
    conversation = exports[name]
    user_texts = _user_texts(conversation)

    session_topics = [tag for tag, _confidence in session_tags(user_texts)]
    chunk_topics = [
        topic
        for chunk in chunk_conversation(conversation)
        for topic in local_tags(chunk, conversation)
    ]
    conversation_title = title(user_texts)
    every_word = _words(session_topics + chunk_topics + tags(user_texts) + [conversation_title])

    assert session_topics and chunk_topics
    assert not every_word & CODE_TOKENS, every_word & CODE_TOKENS
    shown = " ".join(session_topics + chunk_topics + [conversation_title])
    assert not re.search(r"[<>=\"/]", shown), shown


def test_markup_is_stripped_before_keywords_are_taken(exports):
    markup_topics = session_tags(_user_texts(exports["chatgpt_markup"]))

    assert [tag for tag, _ in markup_topics][:1] == ["flexbox-layout"]
    assert "card" in _words(tag for tag, _ in markup_topics)
    # The words between tags still count ("Menu" was a link's text).
    assert "menu" in _words(tag for tag, _ in session_tags(["<a href='/x'>Menu</a> Menu"]))


@pytest.mark.parametrize("name", ["chatgpt_facts", "chatgpt_markup", "claude_markup", "gemini"])
def test_titles_are_a_readable_phrase_not_keyword_salad(exports, name):
    result = title(_user_texts(exports[name]))

    words = result.split()
    assert 2 <= len(words) <= 5
    # One phrase ("Flexbox Layout"), "Notes on" one phrase, or two phrases joined by "and".
    phrases = re.sub(r"^Notes on ", "", result).split(" and ")
    assert len(phrases) <= 2 and all(1 <= len(phrase.split()) <= 3 for phrase in phrases)
    assert result != "Utrecht Partner Sam Sister Anna"


def test_a_chat_of_questions_alone_names_what_was_asked_about():
    summary = summarize([("user", "How do I repot an orchid? Which bark mix works for orchids?")])

    assert summary.startswith("- The user asked about orchid and bark mix")
    assert "?" not in summary and "How do I" not in summary
