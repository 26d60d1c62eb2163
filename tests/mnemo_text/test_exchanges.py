"""The user's words of a stored exchange: what readers of the user's own words (the entity
layer, the search floor) read, the replies left out."""

from __future__ import annotations

from mnemo_text.exchanges import assistant_spans, users_words

EXCHANGE = (
    "**User:**\nMy brother Tom reviews my code.\n\n"
    "**Assistant:**\nMy advice: pair each reviewer with the author.\n\n"
    "**User:**\nThanks, I will ask Tom.\n\n"
    "**Assistant:**\nGood luck with the release."
)


def test_an_exchange_keeps_every_user_turn_and_no_reply():
    words = users_words(EXCHANGE)

    assert "My brother Tom reviews my code." in words
    assert "Thanks, I will ask Tom." in words
    assert "pair each reviewer" not in words and "Good luck" not in words


def test_a_digest_loses_its_assistant_lines_and_keeps_the_users():
    digest = "- The user adopted a cat named Miso.\n- Assistant: Cats like routine.\n- Done."

    assert users_words(digest) == "- The user adopted a cat named Miso.\n\n- Done."
    assert [digest[a:b] for a, b in assistant_spans(digest)] == ["- Assistant: Cats like routine."]


def test_a_text_with_no_assistant_part_is_the_users_whole():
    text = "User: I moved to Denver in May."

    assert users_words(text) == text and assistant_spans(text) == []
