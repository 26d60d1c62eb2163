"""Chat-export parsers: detect a file's format by content and stream normalized conversations.

Entry points:

- :func:`detect_format` names the format of a file or of its first bytes.
- :func:`parse_file` yields :class:`Conversation` objects (displayed branch only, normalized
  text, every pair timestamped) and raises :class:`ParseError` for a broken file and
  :class:`UnrecognizedFormat` for anything that is not a supported export.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from . import api_log, chatgpt, claude, gemini, markdown_log, openwebui
from .base import (
    Conversation,
    ParseError,
    TurnPair,
    file_date,
    fill_timestamps,
    iso_utc,
    normalize_text,
    to_datetime,
)
from .detect import (
    API_LOG,
    CHATGPT,
    CLAUDE,
    CONVERSATION_FORMATS,
    GEMINI_HTML,
    GEMINI_JSON,
    LOCAL_MARKDOWN,
    OPENWEBUI,
    PLATFORM_BY_FORMAT,
    ZIP,
    detect_format,
    json_damage,
)

__all__ = [
    "CONVERSATION_FORMATS",
    "PLATFORM_BY_FORMAT",
    "ZIP",
    "Conversation",
    "ParseError",
    "SkippedConversation",
    "TurnPair",
    "UnrecognizedFormat",
    "detect_format",
    "json_damage",
    "iso_utc",
    "normalize_text",
    "parse_file",
    "skipped_note",
    "to_datetime",
]

UNRECOGNIZED = "unrecognized format"
NO_USABLE_TURNS = "no message with text (empty, or only attachments or tool output)"


class UnrecognizedFormat(Exception):
    """The file is not one of the supported exports; it is skipped, not failed."""

    def __init__(self, message: str = UNRECOGNIZED) -> None:
        super().__init__(message)


Parser = Callable[..., Iterator[Conversation]]

PARSERS: dict[str, Parser] = {
    CHATGPT: chatgpt.parse,
    CLAUDE: claude.parse,
    GEMINI_JSON: gemini.parse_json,
    GEMINI_HTML: gemini.parse_html,
    OPENWEBUI: openwebui.parse,
    LOCAL_MARKDOWN: markdown_log.parse,
    API_LOG: api_log.parse,
}


@dataclass(frozen=True)
class SkippedConversation:
    """A conversation of an export that holds no turn with text, and why it was left out."""

    conversation_id: str
    title: str | None
    reason: str = NO_USABLE_TURNS


def skipped_note(skipped: list[SkippedConversation]) -> str:
    """One line for an import report: how many conversations were left out, and why."""
    if not skipped:
        return ""
    titles = ", ".join(repr(s.title or s.conversation_id or "untitled") for s in skipped[:3])
    more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    reasons = sorted({s.reason for s in skipped})
    noun = "conversation" if len(skipped) == 1 else "conversations"
    return f"{len(skipped)} {noun} skipped ({titles}{more}): {'; '.join(reasons)}"


def parse_file(
    path: Path | str,
    *,
    source_file: str | None = None,
    file_format: str | None = None,
    fallback_date: datetime | None = None,
    skipped: list[SkippedConversation] | None = None,
) -> Iterator[Conversation]:
    """Yield the conversations of one export file, lazily (bounded memory for big files).

    ``source_file`` is the name recorded in chunk frontmatter (defaults to the file name);
    ``fallback_date`` stands in for missing timestamps (defaults to the file's mtime).
    Conversations without any turn pair are not yielded; they are appended to ``skipped``
    (when given) with the reason, so the import can report them. Raises UnrecognizedFormat before
    yielding anything, and ParseError possibly after some conversations were yielded: callers
    that need all-or-nothing must buffer or roll back.
    """
    path = Path(path)
    file_format = file_format or detect_format(path)
    if file_format not in PARSERS:
        raise UnrecognizedFormat()
    fallback = fallback_date or file_date(path)
    name = source_file or path.name
    for conversation in PARSERS[file_format](path, source_file=name):
        if conversation.pairs:
            yield fill_timestamps(conversation, fallback)
        elif skipped is not None:
            skipped.append(SkippedConversation(conversation.conversation_id, conversation.title))
