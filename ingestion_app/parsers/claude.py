"""Claude.ai ``conversations.json``.

The words live in ``content[]`` text blocks; the message-level ``text`` field can hold a
placeholder ("This block is not supported on your current device yet.") when the reply used
tools or artifacts, so it is only a fallback. The array is not always chronological, so
messages are sorted by ``created_at``; when ``parent_message_uuid`` links form a tree (edits,
retries), the displayed branch is the one ending at the current (else the newest) leaf.

Real exports vary: ``content`` and ``attachments`` may be lists, JSON serialised into a string,
null or missing. A string is decoded when it holds a list of blocks; anything else falls back
to ``text``, so a message is never lost because its blocks have an unexpected shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ijson

from .base import Conversation, PairBuilder, ParseError, normalize_text, placeholder, to_datetime
from .detect import CLAUDE, first_json_char, open_utf8

ROOT_SENTINEL = "00000000-0000-4000-8000-000000000000"
# `sender` as Claude.ai writes it; `role` names seen in other tools' Claude exports.
_SENDERS = {"human": "human", "user": "human", "assistant": "assistant", "claude": "assistant"}
_PLACEHOLDER_SNIPPETS = ("This block is not supported on your current device yet.",)


def parse(path: Path, *, source_file: str) -> Iterator[Conversation]:
    """Yield every conversation of a Claude export; raises ParseError on broken JSON."""
    prefix = "item" if first_json_char(path) == "[" else ""
    with open_utf8(path) as handle:
        try:
            for raw in ijson.items(handle, prefix, use_float=True):
                if isinstance(raw, dict) and "chat_messages" in raw:
                    yield conversation_from_dict(raw, source_file=source_file)
        except ijson.common.JSONError as exc:
            raise ParseError(f"truncated or invalid JSON: {exc}") from exc


def conversation_from_dict(raw: dict[str, Any], *, source_file: str) -> Conversation:
    messages = [m for m in _as_list(raw.get("chat_messages")) if isinstance(m, dict)]
    builder = PairBuilder()
    for message in displayed_messages(messages, raw.get("current_leaf_message_uuid")):
        at = to_datetime(message.get("created_at"))
        sender = _SENDERS.get(str(message.get("sender") or message.get("role") or "").lower())
        text = message_text(message)
        if sender == "human":
            builder.add_user(
                text,
                at=at,
                message_id=message.get("uuid"),
                attachments=_attachment_names(message),
            )
        elif sender == "assistant":
            builder.add_assistant(text, at=at, message_id=message.get("uuid"))
    conversation = Conversation(
        platform="claude",
        format=CLAUDE,
        conversation_id=str(raw.get("uuid") or ""),
        source_file=source_file,
        title=normalize_text(raw["name"]) or None if isinstance(raw.get("name"), str) else None,
        model=raw["model"] if isinstance(raw.get("model"), str) and raw["model"] else None,
        created_at=to_datetime(raw.get("created_at")),
    )
    conversation.pairs = builder.finish()
    return conversation


def displayed_messages(
    messages: list[dict[str, Any]], current_leaf: str | None = None
) -> list[dict[str, Any]]:
    """Messages of the branch the user saw, oldest first."""
    ordered = sorted(
        enumerate(messages),
        key=lambda item: (str(item[1].get("created_at") or ""), item[0]),
    )
    ordered_messages = [m for _, m in ordered]
    by_id = {m.get("uuid"): m for m in ordered_messages if m.get("uuid")}
    has_links = any(
        m.get("parent_message_uuid") and m.get("parent_message_uuid") != ROOT_SENTINEL
        for m in ordered_messages
    )
    if not has_links:
        return ordered_messages
    children: dict[str, int] = {}
    for message in ordered_messages:
        parent = message.get("parent_message_uuid")
        if parent:
            children[parent] = children.get(parent, 0) + 1
    if not any(count > 1 for count in children.values()):
        return ordered_messages
    leaf = by_id.get(current_leaf) if current_leaf else None
    if leaf is None:
        leaves = [m for m in ordered_messages if m.get("uuid") not in children]
        leaf = leaves[-1] if leaves else ordered_messages[-1]
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    node: dict[str, Any] | None = leaf
    while node is not None and node.get("uuid") not in seen:
        seen.add(node.get("uuid"))
        branch.append(node)
        node = by_id.get(node.get("parent_message_uuid"))
    branch.reverse()
    return branch


def _as_list(value: Any) -> list:
    """A list field as a list: lists as they are, JSON lists serialised into a string decoded,
    anything else (null, missing, a plain string, a number) empty."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return value if isinstance(value, list) else []


def message_text(message: dict[str, Any]) -> str:
    """Text blocks joined; artifacts kept as fenced code; tool calls, results, thinking dropped.

    Falls back to the message's ``text`` when the blocks give no text at all."""
    blocks = _as_list(message.get("content"))
    pieces: list[str] = []
    if blocks:
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                pieces.append(block["text"])
            elif kind == "tool_use" and block.get("name") == "artifacts":
                artifact = block.get("input") or {}
                title = artifact.get("title") or artifact.get("id") or "artifact"
                body = artifact.get("content")
                if body:
                    language = artifact.get("language") or ""
                    pieces.append(f"[artifact: {title}]\n```{language}\n{body}\n```")
                else:
                    pieces.append(f"[artifact: {title}]")
            elif kind == "image":
                pieces.append(placeholder(block.get("file_name") or "image", "image"))
    if not any(isinstance(p, str) and p.strip() for p in pieces):
        fallback = message.get("text")
        if not isinstance(fallback, str) or not fallback.strip():
            # No `text` either: a plain (not JSON) string `content` is the text itself.
            content = message.get("content")
            fallback = content if isinstance(content, str) and not blocks else ""
        pieces = [fallback]
    text = "\n\n".join(p for p in pieces if p and p.strip())
    for snippet in _PLACEHOLDER_SNIPPETS:
        text = text.replace(f"```\n{snippet}\n```", "").replace(snippet, "")
    return normalize_text(text)


def _attachment_names(message: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for item in _as_list(message.get("attachments")) + _as_list(message.get("files")):
        if isinstance(item, dict):
            name = item.get("file_name") or item.get("name") or item.get("file_uuid")
            if name and name not in names:
                names.append(str(name))
    return names
