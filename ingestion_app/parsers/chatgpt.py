"""ChatGPT ``conversations.json`` (a list, a single conversation object, or split files).

Each conversation is a tree (``mapping``) because regenerations and edits branch it. The user
saw one branch: the path from ``current_node`` up to the root, reversed. Taking "the last
child" at each fork is wrong whenever the user went back to an earlier version.

The file is stream-parsed with ijson, one conversation at a time, so a 200 MB export never
sits in memory whole.
"""

from __future__ import annotations

import json
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
    to_datetime,
)
from .detect import CHATGPT, first_json_char, open_utf8

# Content types that carry no words the user saw (tool traffic, reasoning, memory, profile).
_HIDDEN_CONTENT_TYPES = {
    "user_editable_context",
    "model_editable_context",
    "thoughts",
    "reasoning_recap",
    "tether_browsing_display",
    "tether_quote",
    "system_error",
    "execution_output",
    "computer_output",
    "super_widget",
}


def parse(path: Path, *, source_file: str) -> Iterator[Conversation]:
    """Yield every conversation of a ChatGPT export file.

    Raises ParseError if the JSON is malformed or truncated; conversations already yielded
    must then be discarded by the caller (the import of a file is all or nothing).
    """
    prefix = "item" if first_json_char(path) == "[" else ""
    with open_utf8(path) as handle:
        try:
            for raw in ijson.items(handle, prefix, use_float=True):
                if isinstance(raw, dict) and "mapping" in raw:
                    yield conversation_from_dict(raw, source_file=source_file)
        except ijson.common.IncompleteJSONError as exc:
            raise ParseError(f"truncated or invalid JSON: {exc}") from exc
        except ijson.common.JSONError as exc:
            raise ParseError(f"invalid JSON: {exc}") from exc


def displayed_path(mapping: dict[str, Any], current_node: str | None) -> list[dict[str, Any]]:
    """Nodes of the displayed branch, root first.

    With ``current_node`` missing (very old exports), the newest child is followed at each
    fork, which is what the ChatGPT UI shows by default.
    """
    if current_node and current_node in mapping:
        path: list[dict[str, Any]] = []
        seen: set[str] = set()
        node_id: str | None = current_node
        while node_id and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id]
            path.append(node)
            node_id = node.get("parent")
        path.reverse()
        return path
    roots = [node for node in mapping.values() if not node.get("parent")]
    if not roots:
        return []
    path = [roots[0]]
    while path[-1].get("children"):
        children = [mapping[c] for c in path[-1]["children"] if c in mapping]
        if not children:
            break
        path.append(max(children, key=lambda n: _create_time(n) or 0.0))
    return path


def _create_time(node: dict[str, Any]) -> float | None:
    message = node.get("message") or {}
    value = message.get("create_time")
    return float(value) if value is not None else None


def conversation_from_dict(raw: dict[str, Any], *, source_file: str) -> Conversation:
    mapping = raw.get("mapping") or {}
    conversation_id = str(raw.get("conversation_id") or raw.get("id") or "")
    builder = PairBuilder()
    models: list[str] = []
    previous_cut_off = False
    for node in displayed_path(mapping, raw.get("current_node")):
        message = node.get("message")
        if not message:
            continue
        role = (message.get("author") or {}).get("role")
        metadata = message.get("metadata") or {}
        content = message.get("content") or {}
        content_type = content.get("content_type")
        at = to_datetime(message.get("create_time"))
        if metadata.get("is_visually_hidden_from_conversation") or metadata.get(
            "is_user_system_message"
        ):
            continue
        if role == "user":
            if content_type in _HIDDEN_CONTENT_TYPES:
                continue
            text, names = _content_text(content, metadata)
            builder.add_user(text, at=at, message_id=message.get("id"), attachments=names)
            previous_cut_off = False
        elif role == "assistant":
            recipient = message.get("recipient", "all")
            if recipient == "canmore.create_textdoc":
                # A canvas document the user saw next to the chat: keep it with the reply.
                canvas = _canvas_text(content)
                if canvas:
                    builder.add_assistant(canvas, at=at, message_id=message.get("id"), append=True)
                continue
            if recipient != "all" or content_type in _HIDDEN_CONTENT_TYPES:
                continue
            if message.get("channel") not in (None, "final"):
                continue
            text, _ = _content_text(content, metadata)
            model = metadata.get("model_slug")
            if model:
                models.append(model)
            builder.add_assistant(
                text,
                at=at,
                message_id=message.get("id"),
                model=model,
                continuation=previous_cut_off,
                append=not previous_cut_off,
            )
            finish = (metadata.get("finish_details") or {}).get("type")
            previous_cut_off = finish == "max_tokens"
        elif role == "tool":
            # Tool output is hidden, except pictures it produced (DALL-E) which the user saw.
            for part in content.get("parts") or []:
                if isinstance(part, dict) and part.get("content_type") == "image_asset_pointer":
                    builder.add_assistant_attachment(_image_placeholder(part, metadata))
    conversation = Conversation(
        platform="chatgpt",
        format=CHATGPT,
        conversation_id=conversation_id,
        source_file=source_file,
        title=normalize_text(raw.get("title")) or None,
        model=(models[-1] if models else raw.get("default_model_slug")) or None,
        created_at=to_datetime(raw.get("create_time")),
    )
    conversation.pairs = builder.finish()
    return conversation


def _content_text(content: dict[str, Any], metadata: dict[str, Any]) -> tuple[str, list[str]]:
    """Visible text of a message, with images and files named in place."""
    names: list[str] = []
    attachment_names = {
        a.get("id"): a.get("name") for a in metadata.get("attachments") or [] if a.get("id")
    }
    pieces: list[str] = []
    content_type = content.get("content_type")
    if content_type in ("text", "multimodal_text") or "parts" in content:
        for part in content.get("parts") or []:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                kind = part.get("content_type")
                if kind == "image_asset_pointer":
                    pieces.append(_image_placeholder(part, metadata, attachment_names))
                    names.append(pieces[-1][len("[image: ") : -1])
                elif kind == "audio_transcription" and part.get("text"):
                    pieces.append(part["text"])
                elif kind in ("audio_asset_pointer", "real_time_user_audio_video_asset_pointer"):
                    continue  # the transcription part carries the words
                elif isinstance(part.get("text"), str):
                    pieces.append(part["text"])
    elif content_type == "code":
        language = content.get("language") or ""
        language = "" if language == "unknown" else language
        pieces.append(f"```{language}\n{content.get('text', '')}\n```")
    elif isinstance(content.get("text"), str):
        pieces.append(content["text"])
    # Files attached to the message that no part mentions (documents, spreadsheets).
    for attachment in metadata.get("attachments") or []:
        name = attachment.get("name") or attachment.get("id")
        if name and name not in names and not any(name in p for p in pieces):
            names.append(name)
    # Not stripped: a reply continued after the token limit may resume mid-word.
    text = normalize_text("\n".join(p for p in pieces if p), strip=False)
    return text, names


def _canvas_text(content: dict[str, Any]) -> str:
    try:
        document = json.loads(content.get("text") or "")
    except ValueError:
        return ""
    if not isinstance(document, dict) or not isinstance(document.get("content"), str):
        return ""
    name = document.get("name") or "document"
    return normalize_text(f"[canvas: {name}]\n{document['content']}")


def _image_placeholder(
    part: dict[str, Any],
    metadata: dict[str, Any],
    attachment_names: dict[str, str] | None = None,
) -> str:
    pointer = str(part.get("asset_pointer") or "")
    file_id = pointer.rsplit("/", 1)[-1] if pointer else ""
    if attachment_names is None:
        attachment_names = {
            a.get("id"): a.get("name") for a in metadata.get("attachments") or [] if a.get("id")
        }
    name = attachment_names.get(file_id) or file_id or "image"
    return placeholder(name, "image")
