"""Small presentation helpers shared by the staff pages (no data access)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_WORD = re.compile(r"[\w']+", re.UNICODE)
SNIPPET_CHARS = 280


def query_words(query: str) -> list[str]:
    """The query's words worth highlighting (three letters or more), longest first."""
    words = {w.strip("'").lower() for w in _WORD.findall(query or "")}
    return sorted((w for w in words if len(w) >= 3), key=len, reverse=True)


def snippet_html(text: str, query: str = "", *, width: int = SNIPPET_CHARS) -> SafeString:
    """An escaped excerpt of `text` of about `width` characters, centred on the first query
    word found, with every query word wrapped in <mark>."""
    # Chunks are stored as Markdown ("**User:** ..."); the markers are noise in an excerpt.
    flat = " ".join((text or "").replace("**", "").split())
    words = query_words(query)
    start = 0
    if words and len(flat) > width:
        lowered = flat.lower()
        positions = [p for p in (lowered.find(w) for w in words) if p >= 0]
        if positions:
            start = max(0, min(positions) - width // 3)
    excerpt = flat[start : start + width]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(flat) else ""
    parts, last = [], 0
    if words:
        pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
        for match in pattern.finditer(excerpt):
            parts.append(escape(excerpt[last : match.start()]))
            parts.append(f"<mark>{escape(match.group(0))}</mark>")
            last = match.end()
    parts.append(escape(excerpt[last:]))
    return mark_safe(f"{prefix}{''.join(parts)}{suffix}")  # noqa: S308 - escaped pieces only


def session_label(session, *, width: int = 60) -> str:
    """A session's name for lists: its title, else the start of its first user message."""
    text = (session.title or getattr(session, "first_message", "") or "").strip()
    text = " ".join(text.split())
    if not text:
        return "Untitled chat"
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


# The signals a search hit can carry in `why`, in the order they are shown.
MATCH_SIGNALS = ("keyword", "vector", "entity", "recency")
_SIGNAL_WORDS = {
    "keyword": "matched the words of the query",
    "vector": "close in meaning to the query",
    "entity": "names a person, place or thing of the query",
    "recency": "recent",
}


@dataclass(frozen=True)
class MatchReason:
    """One signal that ranked a result: shown as "keyword #2", explained in its tooltip."""

    signal: str
    rank: int | None
    score: float | None

    @property
    def label(self) -> str:
        return f"{self.signal} #{self.rank}" if self.rank is not None else self.signal

    @property
    def title(self) -> str:
        parts = [_SIGNAL_WORDS[self.signal]]
        if self.rank is not None:
            parts.append(f"rank {self.rank} by {self.signal}")
        if self.score is not None:
            parts.append(f"score {self.score:.3f}")
        return "; ".join(parts)


def match_reasons(why) -> list[MatchReason]:
    """The displayable part of a search hit's `why` (a list of {"signal", "rank", "score"},
    dicts or objects), in the order given. Absent, malformed or unknown entries are dropped,
    never shown half-way: a hit without `why` shows no explanation at all."""
    if not isinstance(why, (list, tuple)):
        return []
    reasons: list[MatchReason] = []
    for entry in why:
        get = entry.get if isinstance(entry, dict) else lambda key, e=entry: getattr(e, key, None)
        signal = get("signal")
        if signal not in MATCH_SIGNALS or any(reason.signal == signal for reason in reasons):
            continue
        rank, score = get("rank"), get("score")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            rank = None
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            score = None
        reasons.append(MatchReason(signal, rank, float(score) if score is not None else None))
    return reasons
