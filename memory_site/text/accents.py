"""Accent folding for keyword search: "José", "Jose" and "JOSÉ" find each other.

The embedded PostgreSQL has no `unaccent` extension, so the stored search vector folds a text
that holds an accented Latin letter with `normalize(text, NFKD)` and drops the combining marks
(`ingestion_app.models.memory_items.AccentsFolded`, immutable: allowed in a generated column),
and every query folds by the same rule here before PostgreSQL parses it. A text without such a
letter is left as it is, at the cost of one regular-expression test.
"""

from __future__ import annotations

import re
import unicodedata

# Latin-1 Supplement to Latin Extended-B (U+00C0-U+024F), as PostgreSQL's pattern says it.
ACCENTED_LATIN = "[\u00c0-\u024f]"
COMBINING_MARKS = "[\u0300-\u036f]"
_ACCENTED = re.compile(ACCENTED_LATIN)
_COMBINING = re.compile(COMBINING_MARKS)


def fold_accents(text: str) -> str:
    """`text` as the search vector indexes it: "Zoë in São Paulo" -> "Zoe in Sao Paulo"."""
    if not _ACCENTED.search(text):
        return text
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text))
