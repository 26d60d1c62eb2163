"""The labelled entity sets and how the offline extractor is scored on them.

Each line of a set is ``{"text": ..., "entities": [{"name": ..., "type": ...}]}``. Labelling
rules: only named things count (a proper name, a named pet, a named project); "my mom" or "the
vet" without a name is not an entity; titles stay in the name ("Dr. Alvarez"); dates are not
entities; holidays and named events are events; languages and -isms are concepts.

A predicted entity matches a labelled one on the normalized name (case, accents, "the" and a
possessive 's ignored); a typed hit also needs the right type. Used by the suite's gate
(`test_entity_gate.py`) and by `bench/entities.py`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mnemo_text.entities import extract_entities, normalize_entity_name

FOLDER = Path(__file__).resolve().parent / "entities"
# name -> (file, what it is). "tuned": the rules were developed against it (optimistic);
# "held out": written after the rules and never tuned on (the honest estimate).
SETS = {
    "labelled": ("labelled.jsonl", "tuned: family, pets, travel, work, tech, health, hobbies"),
    "held-out": ("heldout.jsonl", "held out when written; read since"),
    "openers": ("openers.jsonl", "tuned: sentences opening with a common noun or a name"),
    "openers-held-out": ("openers_heldout.jsonl", "read for its false names; tuned since"),
    "held-out-2": ("heldout_2.jsonl", "held out: never tuned on"),
}


@dataclass
class EntityScores:
    sentences: int = 0
    gold: int = 0
    predicted: int = 0
    name_hits: int = 0
    typed_hits: int = 0
    confusions: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    @staticmethod
    def _ratio(part: int, whole: int) -> float:
        return part / whole if whole else 1.0

    @property
    def typed_precision(self) -> float:
        return self._ratio(self.typed_hits, self.predicted)

    @property
    def typed_recall(self) -> float:
        return self._ratio(self.typed_hits, self.gold)

    @property
    def name_precision(self) -> float:
        return self._ratio(self.name_hits, self.predicted)

    @property
    def name_recall(self) -> float:
        return self._ratio(self.name_hits, self.gold)


def rows_load(name: str) -> list[dict]:
    path = FOLDER / SETS[name][0]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def entities_score(rows: list[dict]) -> EntityScores:
    """The extractor's name and typed hits on `rows`, with every miss and false hit listed."""
    scores = EntityScores(sentences=len(rows))
    for row in rows:
        gold = {normalize_entity_name(item["name"]): item["type"] for item in row["entities"]}
        guessed = {item.normalized: item.type for item in extract_entities(row["text"])}
        scores.gold += len(gold)
        scores.predicted += len(guessed)
        for name, kind in guessed.items():
            if name not in gold:
                scores.errors.append(f"FALSE {name} ({kind})  | {row['text']}")
                continue
            scores.name_hits += 1
            if gold[name] == kind:
                scores.typed_hits += 1
            else:
                scores.confusions[(gold[name], kind)] += 1
                scores.errors.append(f"TYPE  {name}: {kind} (gold {gold[name]})  | {row['text']}")
        for name in gold.keys() - guessed.keys():
            scores.errors.append(f"MISS  {name} ({gold[name]})  | {row['text']}")
    return scores
