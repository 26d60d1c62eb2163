"""Category words: a question about a kind of thing meets the memories of that kind."""

from __future__ import annotations

from mnemo_text.categories import CATEGORY_MAX_CHARS, categories_of, category_terms


def test_short_texts_show_their_categories_and_places_count_by_entity_type():
    assert categories_of("I signed up for a pottery class yesterday!") == ["activity", "art"]
    assert categories_of("Took the kids to see the dinosaurs.") == ["family"]
    assert categories_of("We spent a week in Rome.", entity_types=["place"]) == ["place"]
    assert categories_of("Thanks, that means a lot.") == []
    assert "activities" in category_terms("Swimming with the kids this weekend").split()


def test_a_long_text_shows_none():
    long_reply = "Hiking and camping are great. " * (CATEGORY_MAX_CHARS // 20)
    assert categories_of(long_reply) == []
