"""Search helpers the detectors share: fast case-insensitive keyword lookup and a scan
that retries one character after a rejected candidate."""

from __future__ import annotations

import re
from collections.abc import Callable


def _keyword_hits(
    text: str, lowered: str | None, words: tuple[str, ...], fallback: re.Pattern[str]
) -> list[tuple[int, int]]:
    """Offsets of every case-insensitive occurrence of ``words``.

    ``str.find`` on the lower-cased text is an order of magnitude faster than an IGNORECASE
    alternation; the regex is only used when lower-casing changed the text's length.
    """
    if lowered is None:
        return [match.span() for match in fallback.finditer(text)]
    hits = []
    for word in words:
        position = lowered.find(word)
        while position != -1:
            hits.append((position, position + len(word)))
            position = lowered.find(word, position + 1)
    return hits


def _words_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(word) for word in words), re.IGNORECASE)


def _scan(
    pattern: re.Pattern[str],
    text: str,
    low: int,
    high: int,
    accept: Callable[[re.Match[str]], bool],
) -> None:
    """Run ``accept`` on each match in ``text[low:high]``; after a rejected match, look again
    one character later, so that a long candidate failing validation (a 16-digit run starting
    one group early) does not hide a valid one inside it."""
    position = low
    while (match := pattern.search(text, position, high)) is not None:
        position = match.end() if accept(match) else match.start() + 1
