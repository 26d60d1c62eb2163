"""Accent folding: a memory indexes its accented words folded, a query is folded the same way."""

from __future__ import annotations

from mnemo_text.accents import accented_words_folded, fold_accents


def test_a_query_loses_its_accents_and_nothing_else():
    assert fold_accents("Where did Zoë move, São Paulo?") == "Where did Zoe move, Sao Paulo?"
    assert fold_accents("Dvořák, Müller, Ångström") == "Dvorak, Muller, Angstrom"
    assert fold_accents("curly ’quotes’ — and 日本") == "curly ’quotes’ — and 日本"


def test_a_memory_indexes_each_accented_word_once_folded():
    assert accented_words_folded("Chat 'Café plans'", "Zoë moved to São Paulo; Zoë loves it.") == (
        "Cafe Zoe Sao"
    )
    assert accented_words_folded("", "plain ASCII — with a dash") == ""
    assert accented_words_folded("", "2×3 ÷ 4 and ×× café") == "cafe"  # signs in the range
