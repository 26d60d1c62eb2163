"""Who says what in a stored exchange text: the assistant's parts of a turn-pair chunk
("**User:** ... **Assistant:** ...", as imports and session logs write it) or of a session
digest ("- Assistant: ..." lines), so a reader of the user's words (entities, search's
relevance floor) leaves the reply out: the assistant's "my brother Tom" is not the user's
brother, and a reply's words are not the user's evidence."""

from __future__ import annotations

import re

_ROLE_MARKER = re.compile(r"\*\*(User|Assistant):\*\*")
_ASSISTANT_LINE = re.compile(r"^(?:- )?Assistant: .*$", re.MULTILINE)


def assistant_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each part of `text` the assistant says: the body of every
    "**Assistant:**" block up to the next "**User:**" marker, and every "Assistant: ..." or
    "- Assistant: ..." line. [] for a text with no assistant part."""
    if "Assistant:" not in text:
        return []
    spans = [match.span() for match in _ASSISTANT_LINE.finditer(text)]
    start = None
    for marker in _ROLE_MARKER.finditer(text):
        if marker.group(1) == "Assistant":
            start = marker.end() if start is None else start
        elif start is not None:
            spans.append((start, marker.start()))
            start = None
    if start is not None:
        spans.append((start, len(text)))
    return sorted(spans)


def users_words(text: str) -> str:
    """`text` without its assistant parts (`assistant_spans`): what the user says in it, with
    any header before the first turn. The text itself when no assistant part is marked."""
    spans = assistant_spans(text)
    if not spans:
        return text
    kept, at = [], 0
    for start, end in spans:
        if start > at:
            kept.append(text[at:start])
        at = max(at, end)
    kept.append(text[at:])
    return "".join(kept)
