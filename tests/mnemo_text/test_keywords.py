"""Keywords, tags and titles: what a user sees as a session's tags and title
when Mnemo runs without a language model."""

from __future__ import annotations

import re

from mnemo_text.keywords import keywords, tags, title
from tests.mnemo_text.samples import (
    BERLIN_CHAT,
    JAPAN_ASSISTANT,
    JAPAN_USER,
    STOP_OR_JUNK,
    user_texts,
)


def test_keywords_name_the_topic_with_bounded_decreasing_confidence():
    ranked = keywords([JAPAN_USER, JAPAN_ASSISTANT], k=8)

    words = [word for word, _confidence in ranked]
    assert len(ranked) == 8
    assert {"kyoto", "osaka"} <= set(words)
    assert "japan rail pass" in words  # a repeated proper phrase stays one keyphrase
    confidences = [confidence for _word, confidence in ranked]
    assert all(0.0 <= confidence <= 1.0 for confidence in confidences)
    assert confidences == sorted(confidences, reverse=True)


def test_keywords_drop_stop_words_numbers_placeholders_and_laughter():
    texts = [
        "Hi!!! thanks lol hahaha. My number is [PHONE] and my mail [EMAIL], ok? 2024 12345 42",
        "Der Hund und die Katze. Les chats que je vois. The sourdough starter needs feeding.",
    ]

    words = [word for word, _confidence in keywords(texts, k=20)]

    assert "sourdough starter" in words or "sourdough" in words
    for word in words:
        assert not re.fullmatch(r"[\d\s]+", word), word
        assert "[" not in word and "]" not in word
        assert not set(word.split()) & {"the", "and", "thanks", "lol", "hahaha", "und", "les"}
        assert word == word.lower()


def test_keywords_fold_plurals_into_one_keyword():
    ranked = keywords(["I collect recipes. This recipe is my favourite of all the recipes."])

    words = [word for word, _confidence in ranked]
    assert words[0] == "recipe"
    assert "recipes" not in words


def test_keywords_ignore_urls_and_code_blocks():
    text = (
        "See https://example.com/some/path and www.tracking-site.io for the docs.\n"
        "```python\nimport numpy as np\nvariable_name = np.zeros(10)\n```\n"
        "The docs explain vector indexes."
    )

    words = " ".join(word for word, _confidence in keywords([text], k=20))

    for junk in ("https", "example", "tracking", "numpy", "variable_name", "zeros"):
        assert junk not in words
    assert "vector" in words


def test_keywords_ignore_bare_domains_and_upper_case_web_addresses():
    text = (
        "The guide at Docs.Example.COM/setup/guide and WWW.Tracker-Site.IO/page covers "
        "vector indexes; vector indexes need tuning."
    )

    words = " ".join(word for word, _confidence in keywords([text], k=20))

    for junk in ("docs", "example", "setup", "tracker", "page"):
        assert junk not in words
    assert "vector" in words


def test_tags_are_one_to_three_lowercase_kebab_tags_without_junk():
    result = tags([JAPAN_USER, "ok thanks lol", "[EMAIL] 2024"])

    assert 1 <= len(result) <= 3
    for tag in result:
        assert re.fullmatch(r"[^\W_A-Z]+(?:-[^\W_A-Z]+)*", tag), tag
        assert not set(tag.split("-")) & STOP_OR_JUNK
    assert "japan" in "-".join(result)


def test_tags_skip_a_tag_already_inside_a_better_one():
    result = tags(["The Japan Rail Pass is pricey. Is the Japan Rail Pass worth it in Japan?"])

    assert "japan-rail-pass" in result
    assert "japan" not in result and "rail" not in result


def test_tags_of_small_talk_are_empty():
    assert tags(["hi", "thanks!", "ok lol", "[EMAIL]"]) == []


def test_title_is_three_to_five_title_case_words_about_the_conversation():
    result = title(user_texts(BERLIN_CHAT))

    words = result.split()
    assert 3 <= len(words) <= 5
    assert all(word[0].isupper() or word in {"on"} for word in words)
    assert "Berlin" in words or "Nurse" in words


def test_title_keeps_acronyms_and_pads_short_topics():
    assert "API" in title(["What is an API gateway and do I need one for my iPhone app?"])
    short = title(["postgres vacuum"])
    assert short == "Notes on Postgres Vacuum"
    assert title([]) == "Untitled Conversation"
