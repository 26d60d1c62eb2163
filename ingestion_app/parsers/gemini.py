"""Gemini from Google Takeout: ``My Activity/Gemini Apps/MyActivity.json`` and its HTML twin.

Takeout has no conversation ids: it is a flat activity list, newest first, one record per
prompt with the reply as HTML. Records are put in time order and grouped into conversations
wherever more than ``CONVERSATION_GAP`` separates two prompts. Only prompt records become
turn pairs; feedback and other activity records are ignored.

The HTML variant prints the prompt verb and date in the account's locale (``Pokyn&nbsp;`` and
``1. 1. 2026 10:00:00 SEČ`` in Czech); the file is read cell by cell so a large export is
never parsed as one document.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import ijson
from bs4 import BeautifulSoup

from .base import (
    Conversation,
    PairBuilder,
    ParseError,
    normalize_text,
    placeholder,
    stable_id,
    to_datetime,
)
from .detect import GEMINI_HTML, GEMINI_JSON, first_json_char, open_utf8
from .htmltext import html_to_text
from .localdates import parse_local_datetime

CONVERSATION_GAP = timedelta(minutes=30)

# Prompt verbs as Takeout prints them; other activity ("Gave feedback", "Used ...") is skipped.
PROMPT_VERBS = (
    "prompted",
    "pokyn",  # cs
    "prompt eingegeben",  # de
    "prompt saisi",  # fr
    "instrucción",  # es
    "comando",  # pt/it
    "prompt ingevoerd",  # nl
    "prompt",
    "asked",
)
_PRODUCT = re.compile(r"gemini|bard", re.IGNORECASE)


@dataclass(slots=True)
class _Record:
    at: datetime | None
    prompt: str
    reply: str
    attachments: list[str] = field(default_factory=list)


def parse_json(path: Path, *, source_file: str) -> Iterator[Conversation]:
    """Conversations of a Takeout MyActivity.json; raises ParseError on broken JSON."""
    prefix = "item" if first_json_char(path) == "[" else ""

    def records() -> Iterator[_Record]:
        with open_utf8(path) as handle:
            try:
                for raw in ijson.items(handle, prefix, use_float=True):
                    if isinstance(raw, dict):
                        record = _record_from_json(raw)
                        if record is not None:
                            yield record
            except ijson.common.JSONError as exc:
                raise ParseError(f"truncated or invalid JSON: {exc}") from exc

    yield from group_records(records(), source_file=source_file, file_format=GEMINI_JSON)


def _record_from_json(raw: dict[str, Any]) -> _Record | None:
    header = str(raw.get("header") or "")
    products = " ".join(str(p) for p in raw.get("products") or [])
    if not _PRODUCT.search(header + " " + products):
        return None
    prompt = _strip_verb(str(raw.get("title") or ""))
    if prompt is None:
        return None
    reply = "\n\n".join(
        html_to_text(item.get("html", ""))
        for item in raw.get("safeHtmlItem") or []
        if isinstance(item, dict)
    )
    attachments = [str(name) for name in raw.get("attachedFiles") or [] if name]
    if raw.get("imageFile"):
        attachments.append(str(raw["imageFile"]))
    return _Record(
        at=to_datetime(raw.get("time")),
        prompt=normalize_text(prompt),
        reply=normalize_text(reply),
        attachments=attachments,
    )


def _strip_verb(title: str) -> str | None:
    """The prompt without its activity verb, or None when the record is not a prompt."""
    title = title.strip()
    if "\xa0" in title[:40]:
        verb, _, rest = title.partition("\xa0")
        if verb.strip().lower() in PROMPT_VERBS:
            return rest
    lowered = title.lower()
    for verb in PROMPT_VERBS:
        if lowered.startswith(verb + " ") or lowered.startswith(verb + ":"):
            return title[len(verb) + 1 :]
    return None


def parse_html(path: Path, *, source_file: str) -> Iterator[Conversation]:
    """Conversations of a Takeout MyActivity.html (any locale)."""
    found = False
    records = (r for r in (_record_from_cell(cell) for cell in _cells(path)) if r is not None)
    for conversation in group_records(records, source_file=source_file, file_format=GEMINI_HTML):
        found = True
        yield conversation
    if not found and path.stat().st_size > 0:
        raise ParseError("no Gemini prompt records found in the activity HTML")


_CELL_START = re.compile(r'<div class="outer-cell', re.IGNORECASE)


def _cells(path: Path) -> Iterator[str]:
    """Each activity cell's HTML, read incrementally (bounded memory)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
    buffer = ""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(1 << 20)
            buffer += decoder.decode(block, final=not block)
            starts = [m.start() for m in _CELL_START.finditer(buffer)]
            if not block:
                starts.append(len(buffer))
            for begin, end in zip(starts, starts[1:], strict=False):
                yield buffer[begin:end]
            if starts:
                buffer = buffer[starts[-1] :] if block else ""
            if not block:
                return


_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)


def _record_from_cell(cell_html: str) -> _Record | None:
    soup = BeautifulSoup(cell_html, "html.parser")
    labels = " ".join(
        t.get_text(" ") for t in soup.select(".header-cell, .mdl-typography--caption")
    )
    if labels.strip() and not _PRODUCT.search(labels):
        return None
    main = next(
        (
            c
            for c in soup.select("div.content-cell")
            if "mdl-typography--caption" not in (c.get("class") or [])
            and "mdl-typography--text-right" not in (c.get("class") or [])
        ),
        None,
    )
    if main is None:
        return None
    segments = _BR.split(main.decode_contents())
    date_index = None
    at = None
    for index, segment in enumerate(segments[1:6], start=1):
        text = html_to_text(segment)
        if 0 < len(text) < 80:
            parsed, _ = parse_local_datetime(text)
            if parsed is not None:
                date_index, at = index, parsed
                break
    if date_index is None:
        return None
    prompt_text = html_to_text("<br>".join(segments[:date_index]).replace("&nbsp;", "\xa0"))
    first_line = normalize_text(BeautifulSoup(segments[0], "html.parser").get_text())
    prompt = _strip_verb(first_line)
    if prompt is None:
        return None
    rest_of_prompt = prompt_text.split("\n", 1)[1] if "\n" in prompt_text else ""
    prompt = (prompt + ("\n" + rest_of_prompt if rest_of_prompt else "")).strip()
    reply = html_to_text("<br>".join(segments[date_index + 1 :]))
    attachments = [
        a.get_text().strip() for a in main.find_all("a") if "attach" in (a.get("href") or "")
    ]
    return _Record(
        at=at, prompt=normalize_text(prompt), reply=normalize_text(reply), attachments=attachments
    )


def group_records(
    records: Iterable[_Record], *, source_file: str, file_format: str
) -> Iterator[Conversation]:
    """Records split into conversations wherever more than CONVERSATION_GAP separates two.

    Takeout lists activity newest first, so each conversation is a contiguous run of the file:
    a run is emitted (oldest prompt first) as soon as a gap closes it, which keeps memory
    bounded however long the activity history is.
    """
    group: list[_Record] = []
    for record in records:
        previous = group[-1].at if group else None
        if previous and record.at and abs(record.at - previous) > CONVERSATION_GAP:
            yield _conversation(
                _in_time_order(group), source_file=source_file, file_format=file_format
            )
            group = []
        group.append(record)
    if group:
        yield _conversation(_in_time_order(group), source_file=source_file, file_format=file_format)


def _in_time_order(records: list[_Record]) -> list[_Record]:
    return sorted(records, key=lambda r: (r.at is None, r.at or datetime.min))


def _conversation(records: list[_Record], *, source_file: str, file_format: str) -> Conversation:
    builder = PairBuilder()
    for record in records:
        names = [placeholder(n) for n in record.attachments]
        builder.add_user(record.prompt, at=record.at, attachments=names)
        builder.add_assistant(record.reply, at=record.at)
        builder.finish()  # each Takeout record is exactly one exchange
    first = records[0]
    conversation = Conversation(
        platform="gemini",
        format=file_format,
        conversation_id=stable_id("gemini", first.at.isoformat() if first.at else "", first.prompt),
        source_file=source_file,
        title=None,
        model=None,
        created_at=first.at,
    )
    conversation.pairs = builder.pairs
    return conversation
