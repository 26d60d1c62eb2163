"""API call logs: OpenAI chat/Responses and Anthropic Messages requests with their responses.

Accepted shapes, as a JSON object, a JSON list or JSON Lines:
``{"request": {...}, "response": {...}}``, ``{"model", "messages", ..., "response": {...}}``,
or a bare request ``{"model", "messages"}``. Successive calls of one chat resend the whole
history, so calls whose prompts extend an earlier call's prompts are folded into that
conversation instead of duplicating its pairs. Tool calls and tool results are left out;
images and files are named in the text.
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
    TurnPair,
    normalize_text,
    placeholder,
    stable_id,
    to_datetime,
)
from .detect import API_LOG, first_json_char, open_utf8


def parse(path: Path, *, source_file: str) -> Iterator[Conversation]:
    """Conversations rebuilt from the calls in the log; raises ParseError on broken JSON."""
    conversations: dict[str, Conversation] = {}
    order: list[str] = []
    for call in _calls(path):
        conversation = _conversation_from_call(call, source_file=source_file)
        if conversation is None:
            continue
        key = conversation.conversation_id
        existing = conversations.get(key)
        if existing is None:
            conversations[key] = conversation
            order.append(key)
        elif _extends(existing.pairs, conversation.pairs):
            # keep the timestamps recorded when earlier pairs first happened
            for old, new in zip(existing.pairs, conversation.pairs, strict=False):
                new.user_at = old.user_at or new.user_at
                new.assistant_at = old.assistant_at or new.assistant_at
            existing.pairs = conversation.pairs
            existing.model = conversation.model or existing.model
        else:
            key = stable_id(key, len(order))
            conversation.conversation_id = key
            conversations[key] = conversation
            order.append(key)
    for key in order:
        yield conversations[key]


def _calls(path: Path) -> Iterator[dict[str, Any]]:
    first = first_json_char(path)
    if first == "[":
        with open_utf8(path) as handle:
            try:
                for item in ijson.items(handle, "item", use_float=True):
                    if isinstance(item, dict):
                        yield item
            except ijson.common.JSONError as exc:
                raise ParseError(f"truncated or invalid JSON: {exc}") from exc
        return
    with open_utf8(path) as handle:
        first_line = handle.readline()
        try:
            record = json.loads(first_line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            # JSON Lines: one call per line, streamed.
            yield record
            for number, raw in enumerate(handle, start=2):
                line = raw.decode("utf-8", errors="replace").strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise ParseError(f"line {number} is not valid JSON: {exc}") from exc
                if isinstance(record, dict):
                    yield record
            return
        # One pretty-printed call object.
        data = first_line + handle.read()
    try:
        whole = json.loads(data.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise ParseError(f"invalid JSON: {exc}") from exc
    if isinstance(whole, dict):
        yield whole


def _extends(old: list[TurnPair], new: list[TurnPair]) -> bool:
    if len(new) < len(old):
        return False
    return all(a.user_text == b.user_text for a, b in zip(old, new, strict=False))


def _conversation_from_call(call: dict[str, Any], *, source_file: str) -> Conversation | None:
    request = call.get("request") or call.get("body") or call.get("input") or call
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        return None
    response = call.get("response") or call.get("output") or call.get("completion")
    if response is None and "choices" in call:
        response = call
    at = (
        to_datetime(call.get("timestamp"))
        or to_datetime(call.get("created_at"))
        or (to_datetime(response.get("created")) if isinstance(response, dict) else None)
        or to_datetime(call.get("created"))
    )
    model = (response.get("model") if isinstance(response, dict) else None) or request.get("model")
    builder = PairBuilder()
    system_parts: list[str] = []
    if request.get("system"):
        system_parts.append(_text(request["system"]))
    for message in request["messages"]:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        text, names = _message_text(message.get("content"))
        if role in ("system", "developer"):
            system_parts.append(text)
        elif role == "user":
            builder.add_user(text, at=at, attachments=names)
        elif role == "assistant":
            builder.add_assistant(text, at=at, model=model)
    reply = _response_text(response)
    if reply:
        builder.add_assistant(reply, at=at, model=model)
    pairs = builder.finish()
    if not pairs:
        return None
    system_prompt = normalize_text("\n".join(p for p in system_parts if p)) or None
    first_user = next((p.user_text for p in pairs if p.user_text), "")
    conversation = Conversation(
        platform="api",
        format=API_LOG,
        conversation_id=str(call.get("conversation_id") or call.get("session_id") or "")
        or stable_id("api", system_prompt or "", first_user),
        source_file=source_file,
        title=None,
        model=model,
        created_at=at,
        system_prompt=system_prompt,
    )
    conversation.pairs = pairs
    return conversation


def _message_text(content: Any) -> tuple[str, list[str]]:
    if isinstance(content, str):
        return normalize_text(content), []
    pieces: list[str] = []
    names: list[str] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            pieces.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif kind in ("image_url", "input_image", "image"):
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            source = part.get("source") if isinstance(part.get("source"), dict) else {}
            ref = url or source.get("url") or ""
            name = "inline image" if not ref or str(ref).startswith("data:") else ref
            names.append(placeholder(str(name).rsplit("/", 1)[-1], "image"))
        elif kind in ("file", "input_file", "document"):
            file_info = part.get("file") if isinstance(part.get("file"), dict) else part
            name = file_info.get("filename") or part.get("title") or "file"
            names.append(placeholder(str(name), "attachment"))
    return normalize_text("\n".join(p for p in pieces if p)), names


def _text(value: Any) -> str:
    return _message_text(value)[0]


def _response_text(response: Any) -> str:
    if response is None:
        return ""
    if isinstance(response, str):
        return normalize_text(response)
    if not isinstance(response, dict):
        return ""
    choices = response.get("choices")
    if isinstance(choices, list) and choices:
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        return _message_text(message.get("content"))[0] or normalize_text(choice.get("text"))
    if isinstance(response.get("output_text"), str):
        return normalize_text(response["output_text"])
    output = response.get("output")
    if isinstance(output, list):
        texts = [
            _message_text(item.get("content"))[0]
            for item in output
            if isinstance(item, dict) and item.get("type") == "message"
        ]
        return "\n\n".join(t for t in texts if t)
    if "content" in response:
        return _message_text(response.get("content"))[0]
    return ""
