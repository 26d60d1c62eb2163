"""Offline entity extractor: precision and recall on every labelled set, and its time per text.

The sets and the scoring are the suite's (`tests/mnemo_text/entity_sets.py`; the gate is
`tests/mnemo_text/test_entity_gate.py`): "tuned" sets were used to develop the rules and
read optimistic, held-out ones were never tuned on. Two figures per set: names alone, and
typed (a prediction counts only with the right type). Figures go to bench/RESULTS.md.

Run: ``.venv/bin/python bench/entities.py [--errors]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mnemo_text.entities import extract_entities  # noqa: E402
from tests.mnemo_text.entity_sets import SETS, entities_score, rows_load  # noqa: E402


def _print(title: str, scores) -> None:
    print(f"== {title}")
    for label, precision, recall, hits in (
        ("name", scores.name_precision, scores.name_recall, scores.name_hits),
        ("typed", scores.typed_precision, scores.typed_recall, scores.typed_hits),
    ):
        print(
            f"{label:5s}: precision {precision:.3f}, recall {recall:.3f} ({hits} hits, "
            f"{scores.predicted} predicted, {scores.gold} labelled, {scores.sentences} sentences)"
        )
    if scores.confusions:
        worst = ", ".join(f"{g}->{p} x{n}" for (g, p), n in scores.confusions.most_common(5))
        print(f"type confusions (gold->predicted): {worst}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--errors", action="store_true", help="print every miss and false hit")
    arguments = parser.parse_args()
    every: list[dict] = []
    for name, (filename, about) in SETS.items():
        rows = rows_load(name)
        every.extend(rows)
        scores = entities_score(rows)
        _print(f"{name} ({filename}; {about})", scores)
        if arguments.errors:
            print("\n".join(scores.errors))
    _print("all sentences", entities_score(every))
    timings = []
    for row in every:
        started = time.perf_counter()
        extract_entities(row["text"])
        timings.append(time.perf_counter() - started)
    timings.sort()
    print(
        f"time per sentence: p50 {statistics.median(timings) * 1000:.3f} ms, "
        f"p95 {timings[int(len(timings) * 0.95)] * 1000:.3f} ms; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
