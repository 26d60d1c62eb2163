"""The local session raw log of the reference (``raw/[session-id].md``).

Each exchange is appended as::

    ---
    **Timestamp:** 2026-03-31T14:23:00Z
    **Model:** model-id
    **Turn:** 4
    **User:**
    prompt text
    **Assistant:**
    reply text

An entry starts only where a ``---`` line is followed by a ``**Timestamp:**`` line, so a
horizontal rule or a bold label inside a reply does not cut it. The session id is the file
name's stem, as the reference names the log after its session.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .base import Conversation, PairBuilder, ParseError, normalize_text, to_datetime
from .detect import LOCAL_MARKDOWN

_ENTRY_START = re.compile(r"^---[ \t]*\n(?=\*\*Timestamp:\*\*)", re.MULTILINE)
_FIELD = re.compile(r"^\*\*(Timestamp|Model|Turn|Session):\*\*[ \t]*(.*)$", re.MULTILINE)
_USER = re.compile(r"^\*\*User:\*\*[ \t]*\n?", re.MULTILINE)
_ASSISTANT = re.compile(r"^\*\*Assistant:\*\*[ \t]*\n?", re.MULTILINE)


def parse(path: Path, *, source_file: str) -> Iterator[Conversation]:
    """One conversation per session log file; raises ParseError if it cannot be decoded."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(f"session log is not valid UTF-8: {exc}") from exc
    text = normalize_text(text)
    parts = _ENTRY_START.split("\n" + text)
    builder = PairBuilder()
    models: list[str] = []
    session_id = None
    for part in parts:
        fields = dict(_FIELD.findall(part.split("**User:**", 1)[0]))
        user_match = _USER.search(part)
        if "Timestamp" not in fields or user_match is None:
            continue
        assistant_match = _ASSISTANT.search(part, user_match.end())
        user_text = part[user_match.end() : assistant_match.start() if assistant_match else None]
        assistant_text = part[assistant_match.end() :] if assistant_match else ""
        at = to_datetime(fields["Timestamp"].strip())
        model = fields.get("Model", "").strip() or None
        if model:
            models.append(model)
        session_id = session_id or fields.get("Session", "").strip() or None
        builder.add_user(user_text, at=at, message_id=f"turn-{fields.get('Turn', '').strip()}")
        builder.add_assistant(assistant_text, at=at, model=model)
        builder.finish()
    conversation = Conversation(
        platform="local",
        format=LOCAL_MARKDOWN,
        conversation_id=session_id or Path(source_file).stem,
        source_file=source_file,
        title=None,
        model=models[-1] if models else None,
    )
    conversation.pairs = builder.pairs
    yield conversation
