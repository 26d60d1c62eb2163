"""The one sentence splitter: where sentences end, and the offsets every caller cuts with."""

from __future__ import annotations

import pytest

from mnemo_text.sentences import sentence_spans


def pieces(text: str, **options) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text, **options)]


def test_a_title_or_an_abbreviation_before_lower_case_ends_no_sentence():
    text = 'The vet Dr. Okafor said "rest him." Then we left, e.g. early. St. Louis was next.'
    assert pieces(text) == [
        'The vet Dr. Okafor said "rest him."',
        "Then we left, e.g. early.",
        "St. Louis was next.",
    ]


def test_a_word_that_only_ends_like_a_title_still_ends_its_sentence():
    assert pieces("I met MDr. Then I left.") == ["I met MDr.", "Then I left."]


def test_cjk_full_stops_end_a_sentence_without_a_space():
    assert pieces("今天很好。明天下雨！好吗？") == ["今天很好。", "明天下雨！", "好吗？"]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            "none",
            ["Intro line\nwrapped here.", "Next one.", "- first\n- second\n\nA new paragraph"],
        ),
        (
            "every",
            ["Intro line", "wrapped here.", "Next one.", "- first", "- second", "A new paragraph"],
        ),
        (
            "blocks",
            ["Intro line\nwrapped here.", "Next one.", "- first", "- second", "A new paragraph"],
        ),
    ],
)
def test_what_a_line_break_is_depends_on_the_caller(lines, expected):
    text = "Intro line\nwrapped here. Next one.\n- first\n- second\n\nA new paragraph"
    assert pieces(text, lines=lines) == expected


def test_display_also_cuts_at_a_colon():
    text = "Here is the plan: book the flight. Then pack."
    assert pieces(text) == ["Here is the plan: book the flight.", "Then pack."]
    assert pieces(text, colons=True) == ["Here is the plan:", "book the flight.", "Then pack."]


def test_offsets_point_into_the_text_with_the_whitespace_left_out():
    text = "  First one.   Second one.  \n\n  Third  "
    spans = sentence_spans(text, lines="every")
    assert [text[start:end] for start, end in spans] == ["First one.", "Second one.", "Third"]
    assert all(not text[start].isspace() and not text[end - 1].isspace() for start, end in spans)


def test_a_start_offset_skips_what_comes_before_it():
    text = "Skipped here. Kept one. Kept two."
    assert pieces(text, start=text.index("Kept")) == ["Kept one.", "Kept two."]


def test_empty_and_blank_texts_have_no_sentences():
    assert sentence_spans("") == []
    assert sentence_spans(" \n\t ") == []
