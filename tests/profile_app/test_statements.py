"""The offline profile reader against labelled sentences, and the newer-replaces-older rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo_text.profile_statements import (
    FACT,
    INSTRUCTION,
    PREFERENCE,
    WITHDRAWAL,
    profile_statements,
    replaces,
)

LABELLED = Path(__file__).with_name("statements_labelled.jsonl")
# The gate: a rule change that costs more than this on the labelled sentences fails.
MIN_PRECISION = 0.95
MIN_RECALL = 0.9


def labelled() -> list[dict]:
    return [json.loads(line) for line in LABELLED.read_text().splitlines() if line.strip()]


def test_labelled_statements_hold_precision_and_recall_per_kind():
    counts = {kind: {"tp": 0, "fp": 0, "fn": 0} for kind in (INSTRUCTION, PREFERENCE, WITHDRAWAL)}
    for row in labelled():
        if "kind" not in row:
            continue
        found = {s.kind for s in profile_statements(row["text"]) if s.kind != FACT}
        for kind, count in counts.items():
            if kind in found and row["kind"] == kind:
                count["tp"] += 1
            elif kind in found:
                count["fp"] += 1
            elif row["kind"] == kind:
                count["fn"] += 1
    for kind, count in counts.items():
        precision = count["tp"] / max(1, count["tp"] + count["fp"])
        recall = count["tp"] / max(1, count["tp"] + count["fn"])
        assert precision >= MIN_PRECISION, (kind, count)
        assert recall >= MIN_RECALL, (kind, count)


def test_labelled_facts_are_read_with_their_slots():
    wrong = []
    for row in labelled():
        if "facts" not in row:
            continue
        found = sorted(
            f"{s.slot}={s.text.split(': ', 1)[1]}"
            for s in profile_statements(row["text"])
            if s.kind == FACT
        )
        if found != sorted(row["facts"]):
            wrong.append((row["text"], found))
    assert not wrong


def test_a_statement_inside_a_long_message_is_found_and_code_is_not_read():
    text = (
        "I'm building a budget tracker in Flask and the totals page is slow.\n\n"
        "```python\n# always use the cache\nprint('never mind')\n```\n\n"
        "Also, from now on please keep your answers short."
    )
    statements = profile_statements(text)
    assert [(s.kind, s.slot, s.text) for s in statements] == [
        (FACT, "project", "Working on: a budget tracker in Flask"),
        (INSTRUCTION, "answer_length", "Also, from now on please keep your answers short."),
    ]


def one(text):
    (statement,) = [s for s in profile_statements(text) if s.kind != FACT]
    return statement


REPLACEMENTS = Path(__file__).with_name("replacements_labelled.jsonl")


def replacement_pairs() -> list[tuple[str, str, bool]]:
    """Labelled pairs: an older statement, a newer one, and whether the newer replaces it."""
    rows = [json.loads(line) for line in REPLACEMENTS.read_text().splitlines() if line.strip()]
    return [(row["old"], row["new"], row["replaces"]) for row in rows]


@pytest.mark.parametrize("old, new, expected", replacement_pairs())
def test_newer_replaces_older_only_when_it_is_about_the_same_thing(old, new, expected):
    before, after = one(old), one(new)
    assert replaces(after, before.kind, before.slot, before.terms) is expected


def test_a_fact_replaces_only_its_own_slot():
    (home,) = profile_statements("I live in Lisbon.")
    (moved,) = profile_statements("I just moved to Porto.")
    (work,) = profile_statements("I work at Initech.")
    assert replaces(moved, home.kind, home.slot, home.terms)
    assert not replaces(work, home.kind, home.slot, home.terms)
