"""The offline entity extractor held by its labelled sentences: a change that costs more than a
point of typed precision or recall on any set fails here, with the sentences it got wrong.

A new rule lands with the labelled sentences that need it (in `entities/labelled.jsonl` or
`openers.jsonl`); `heldout_2.jsonl` is never tuned on, so its figure stays an honest estimate.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.mnemo_text.entity_sets import SETS, entities_score, rows_load

GATE = json.loads((Path(__file__).with_name("entity_gate.json")).read_text())
TOLERANCE = 0.01


@pytest.mark.parametrize("name", sorted(SETS))
def test_typed_precision_and_recall_hold_on_each_labelled_set(name):
    scores = entities_score(rows_load(name))
    floor = GATE[name]
    wrong = "\n".join(scores.errors[:20])
    assert scores.typed_precision >= floor["typed_precision"] - TOLERANCE, wrong
    assert scores.typed_recall >= floor["typed_recall"] - TOLERANCE, wrong


def test_every_set_has_a_gate_and_every_gate_a_set():
    assert set(GATE) - {"about"} == set(SETS)
