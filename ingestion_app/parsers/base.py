"""The normalized shape every chat-export parser produces (Layer 2 of the reference pipeline).

A parser turns one export file into a stream of :class:`Conversation` objects, each holding the
displayed branch as 1-indexed :class:`TurnPair` objects. Text is already normalized here
(UTF-8, Unix line endings, no NUL bytes, non-ASCII preserved) so chunking never has to care
which platform the words came from.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

PLATFORMS = ("chatgpt", "claude", "gemini", "openwebui", "local", "api")


class ParseError(Exception):
    """The file has a recognized format but cannot be read (truncated, malformed, wrong shape).

    The message is written for the person who uploaded the file; the import marks the whole
    file as failed and writes nothing from it.
    """


@dataclass(slots=True)
class TurnPair:
    """One user prompt and the reply the user saw, in display order.

    ``index`` is the 1-based position in the displayed branch of the conversation.
    ``assistant_text`` is empty when the prompt was never answered (the pair is still kept so
    the prompt is not lost); ``user_text`` is empty when an assistant spoke first (greeting).
    """

    index: int
    user_text: str
    assistant_text: str
    user_at: datetime | None = None
    assistant_at: datetime | None = None
    model: str | None = None
    attachments: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)

    @property
    def timestamp(self) -> datetime | None:
        return self.user_at or self.assistant_at

    @property
    def fingerprint(self) -> str:
        """Content hash of the exchange; two imports of the same pair give the same value."""
        digest = hashlib.sha256()
        digest.update(self.user_text.encode("utf-8"))
        digest.update(b"\x00")
        digest.update(self.assistant_text.encode("utf-8"))
        return digest.hexdigest()

    def word_count(self) -> int:
        return len(self.user_text.split()) + len(self.assistant_text.split())


@dataclass(slots=True)
class Conversation:
    """One conversation of an export, reduced to the branch the user was shown."""

    platform: str
    format: str
    conversation_id: str
    source_file: str
    title: str | None = None
    model: str | None = None
    created_at: datetime | None = None
    pairs: list[TurnPair] = field(default_factory=list)
    system_prompt: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def total_turns(self) -> int:
        return len(self.pairs)


class PairBuilder:
    """Folds a display-ordered message stream into turn pairs.

    Rules shared by every flat format: empty messages are ignored; consecutive user messages
    become one prompt (an identical resend is kept once); consecutive assistant messages are
    regenerations by default (the last one wins) unless ``continuation=True`` says the next
    message continues the previous text; a prompt never answered still becomes a pair.
    """

    def __init__(self) -> None:
        self.pairs: list[TurnPair] = []
        self._reset()

    def add_user(
        self,
        text: str,
        *,
        at: datetime | None = None,
        message_id: str | None = None,
        attachments: list[str] | None = None,
    ) -> None:
        text = text.strip()
        if not text and not attachments:
            return
        if self._open and (self._assistant or self._assistant_ids):
            self._flush()
        if not self._open:
            self._open = True
            self._user_at = at
        if text and text not in self._user_parts:
            self._user_parts.append(text)
        if message_id:
            self._user_ids.append(message_id)
        for name in attachments or []:
            if name not in self._attachments:
                self._attachments.append(name)

    def add_assistant(
        self,
        text: str,
        *,
        at: datetime | None = None,
        message_id: str | None = None,
        model: str | None = None,
        continuation: bool = False,
        append: bool = False,
    ) -> None:
        """Record an assistant message.

        ``continuation`` glues the text to the previous reply with no separator (a reply cut
        at the token limit and continued); ``append`` adds it as a new paragraph of the same
        reply (several visible messages in one turn); neither means a regeneration.
        """
        if not text.strip():
            return
        if not self._open:
            self._open = True
            self._user_at = None
        # Whitespace is kept until the pair is closed: a continuation may start mid-word.
        if self._assistant and continuation:
            self._assistant = self._assistant + text
        elif self._assistant.strip() and append:
            self._assistant = self._assistant.rstrip() + "\n\n" + text.strip()
        else:
            self._assistant = text
            self._assistant_ids = []
        self._assistant_at = at or self._assistant_at
        if message_id:
            self._assistant_ids.append(message_id)
        if model:
            self._model = model

    def add_assistant_attachment(self, placeholder: str) -> None:
        """Name an image or file the assistant produced (e.g. a generated picture)."""
        if not self._open:
            return
        self._assistant = (self._assistant + "\n\n" + placeholder).strip()

    def _flush(self) -> None:
        if not self._open:
            return
        user_text = "\n\n".join(self._user_parts)
        placeholders = [placeholder(name) for name in self._attachments if name not in user_text]
        if placeholders:
            user_text = (user_text + "\n\n" + "\n".join(placeholders)).strip()
        assistant_text = self._assistant.strip()
        if user_text or assistant_text:
            self.pairs.append(
                TurnPair(
                    index=len(self.pairs) + 1,
                    user_text=user_text,
                    assistant_text=assistant_text,
                    user_at=self._user_at,
                    assistant_at=self._assistant_at,
                    model=self._model,
                    attachments=list(self._attachments),
                    message_ids=self._user_ids + self._assistant_ids,
                )
            )
        self._reset()

    def _reset(self) -> None:
        self._user_parts: list[str] = []
        self._user_at: datetime | None = None
        self._user_ids: list[str] = []
        self._attachments: list[str] = []
        self._assistant = ""
        self._assistant_at: datetime | None = None
        self._assistant_ids: list[str] = []
        self._model: str | None = None
        self._open = False

    def finish(self) -> list[TurnPair]:
        self._flush()
        return self.pairs


_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".heic", ".svg")


def placeholder(name: str, kind: str | None = None) -> str:
    """The in-text marker for a non-text part, e.g. ``[image: photo.png]``."""
    if kind is None:
        kind = "image" if name.lower().endswith(_IMAGE_EXTENSIONS) else "attachment"
    if name.startswith("[") and name.endswith("]"):
        return name
    return f"[{kind}: {name}]"


_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def normalize_text(value: object, *, strip: bool = True) -> str:
    """UTF-8-safe text with Unix line endings.

    Lone UTF-16 surrogates (a half-escaped emoji) become U+FFFD so the text can always be
    encoded; CRLF and bare CR become LF; control characters other than tab and newline are
    dropped; NFC composition keeps accented letters comparable across platforms.
    """
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if _LONE_SURROGATE.search(text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL_CHARS.sub("", text)
    text = unicodedata.normalize("NFC", text)
    return text.strip() if strip else text


def to_datetime(value: object) -> datetime | None:
    """Parse epoch seconds/milliseconds or an ISO 8601 string into an aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float | Decimal):
        seconds = float(value)
        if seconds > 1e14:  # microseconds
            seconds /= 1_000_000
        elif seconds > 1e11:  # milliseconds (Open WebUI chat timestamps)
            seconds /= 1000
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?", text):
            return to_datetime(float(text))
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        # Python < 3.11 style fractional seconds longer than 6 digits
        text = re.sub(r"(\.\d{6})\d+", r"\1", text)
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    return None


def iso_utc(value: datetime | None) -> str | None:
    """``2024-03-13T14:48:44Z``: ISO 8601 in UTC, second precision."""
    if value is None:
        return None
    return value.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def file_date(path: Path) -> datetime:
    """The file's modification time: the timestamp of last resort when a source has none."""
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


def stable_id(*parts: object) -> str:
    """A short deterministic id for sources that carry none (Gemini, API logs)."""
    digest = hashlib.sha1("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return digest[:16]


def fill_timestamps(conversation: Conversation, fallback: datetime) -> Conversation:
    """Give every pair a timestamp: its own, else the previous pair's, else the fallback.

    The reference demands ISO 8601 timestamps on every chunk; when the source has none the
    file date stands in, and created_at falls back to the first pair.
    """
    last: datetime | None = conversation.created_at
    for pair in conversation.pairs:
        if pair.user_at is None and pair.assistant_at is None:
            pair.user_at = last or fallback
        last = pair.timestamp
    if conversation.created_at is None:
        first = conversation.pairs[0].timestamp if conversation.pairs else None
        conversation.created_at = first or fallback
    return conversation


ConversationStream = Iterator[Conversation]
