"""Open WebUI chat export: one ``chat`` object, a row ``{id, chat: {...}}``, or a list of rows.

Messages form a tree in ``history.messages`` (regenerations and multi-model answers are
siblings); the displayed branch runs from ``history.currentId`` up through ``parentId``.
Some exports carry SQL-escaped apostrophes (``can''t``); those are undone between letters
only, so code such as ``x = ''`` is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ijson

from .base import (
    Conversation,
    PairBuilder,
    ParseError,
    normalize_text,
    placeholder,
    stable_id,
    to_datetime,
)
from .detect import OPENWEBUI, first_json_char, open_utf8

_DOUBLED_APOSTROPHE = re.compile(r"(?<=\w)''(?=\w)")


def parse(path: Path, *, source_file: str) -> Iterator[Conversation]:
    """Yield every chat of an Open WebUI export; raises ParseError on broken JSON."""
    prefix = "item" if first_json_char(path) == "[" else ""
    with open_utf8(path) as handle:
        try:
            for raw in ijson.items(handle, prefix, use_float=True):
                if isinstance(raw, dict):
                    conversation = conversation_from_dict(raw, source_file=source_file)
                    if conversation is not None:
                        yield conversation
        except ijson.common.JSONError as exc:
            raise ParseError(f"truncated or invalid JSON: {exc}") from exc


def conversation_from_dict(raw: dict[str, Any], *, source_file: str) -> Conversation | None:
    chat = raw.get("chat") if isinstance(raw.get("chat"), dict) else raw
    history = chat.get("history") if isinstance(chat.get("history"), dict) else {}
    messages = _displayed_messages(history, chat.get("messages"))
    if not messages and not history:
        return None
    builder = PairBuilder()
    for message in messages:
        role = message.get("role")
        text = _clean(message.get("content"))
        at = to_datetime(message.get("timestamp"))
        if role == "user":
            builder.add_user(
                text, at=at, message_id=message.get("id"), attachments=_file_names(message)
            )
        elif role == "assistant":
            builder.add_assistant(
                text,
                at=at,
                message_id=message.get("id"),
                model=message.get("model") or None,
            )
    models = chat.get("models") or []
    root_id = messages[0].get("id") if messages else ""
    created_at = to_datetime(raw.get("created_at")) or to_datetime(chat.get("timestamp"))
    conversation_id = str(raw.get("id") or chat.get("id") or "") or stable_id(
        "openwebui", root_id, chat.get("timestamp"), chat.get("title")
    )
    conversation = Conversation(
        platform="openwebui",
        format=OPENWEBUI,
        conversation_id=conversation_id,
        source_file=source_file,
        title=normalize_text(raw.get("title") or chat.get("title")) or None,
        model=(models[0] if models else None),
        created_at=created_at,
    )
    conversation.pairs = builder.finish()
    if conversation.pairs and not conversation.model:
        conversation.model = conversation.pairs[-1].model
    return conversation


def _displayed_messages(history: dict[str, Any], flat: Any) -> list[dict[str, Any]]:
    nodes = history.get("messages") if isinstance(history.get("messages"), dict) else {}
    current = history.get("currentId")
    if nodes and current in nodes:
        branch: list[dict[str, Any]] = []
        seen: set[str] = set()
        node_id = current
        while node_id and node_id in nodes and node_id not in seen:
            seen.add(node_id)
            branch.append(nodes[node_id])
            node_id = nodes[node_id].get("parentId")
        branch.reverse()
        return branch
    if isinstance(flat, list):
        return [m for m in flat if isinstance(m, dict)]
    return list(nodes.values())


def _clean(value: Any) -> str:
    if isinstance(value, list):  # OpenAI-style parts
        value = "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
    text = normalize_text(value)
    return _DOUBLED_APOSTROPHE.sub("'", text)


def _file_names(message: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for item in message.get("files") or []:
        if not isinstance(item, dict):
            continue
        name = item.get("name") or (item.get("file") or {}).get("filename")
        if not name and item.get("type") == "image":
            url = str(item.get("url") or "")
            name = "inline image" if url.startswith("data:") else url.rsplit("/", 1)[-1]
            name = placeholder(name or "image", "image")
        if name:
            names.append(str(name))
    return names
