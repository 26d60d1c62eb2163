"""Small presentation helpers shared by the staff pages (no data access)."""

from __future__ import annotations

import re

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
