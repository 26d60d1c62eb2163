"""Small chat exports written from the documented schemas, for parser and import tests.

Each builder returns plain dicts/lists shaped like the real export, so tests can tweak one
field (a branch, a hidden flag, a timestamp) and see the parser's reaction.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

BASE_TS = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def _uid(label: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, label))


def chatgpt_node(
    node_id: str,
    role: str | None,
    text: str | None,
    *,
    parent: str | None,
    children: list[str] | None = None,
    create_time: float | None = None,
    content_type: str = "text",
    recipient: str = "all",
    model: str | None = "gpt-4o",
    hidden: bool = False,
    finish: str | None = "stop",
    author_name: str | None = None,
    parts: list[Any] | None = None,
    metadata: dict | None = None,
) -> dict:
    if role is None:
        return {"id": node_id, "message": None, "parent": parent, "children": children or []}
    meta: dict[str, Any] = dict(metadata or {})
    if role == "assistant" and model:
        meta["model_slug"] = model
        if finish:
            meta["finish_details"] = {"type": finish}
    if hidden:
        meta["is_visually_hidden_from_conversation"] = True
    content: dict[str, Any] = {"content_type": content_type}
    if content_type in ("text", "multimodal_text"):
        content["parts"] = parts if parts is not None else [text or ""]
    elif content_type == "code":
        content["language"] = "unknown"
        content["text"] = text or ""
    else:
        content["result"] = text or ""
    return {
        "id": node_id,
        "message": {
            "id": node_id,
            "author": {"role": role, "name": author_name, "metadata": {}},
            "create_time": create_time,
            "update_time": None,
            "content": content,
            "status": "finished_successfully",
            "end_turn": True,
            "weight": 1.0,
            "metadata": meta,
            "recipient": recipient,
        },
        "parent": parent,
        "children": children or [],
    }


def chatgpt_linear(
    title: str,
    exchanges: list[tuple[str, str]],
    *,
    conversation_id: str | None = None,
    start: float = BASE_TS,
    model: str = "gpt-4o",
) -> dict:
    """A conversation without branches: root, hidden system message, then the exchanges."""
    conversation_id = conversation_id or _uid(title)
    mapping: dict[str, dict] = {}
    root = f"{conversation_id}-root"
    system = f"{conversation_id}-system"
    mapping[root] = chatgpt_node(root, None, None, parent=None, children=[system])
    mapping[system] = chatgpt_node(system, "system", "", parent=root, hidden=True, create_time=None)
    previous = system
    for number, (question, answer) in enumerate(exchanges, start=1):
        user_id = f"{conversation_id}-u{number}"
        assistant_id = f"{conversation_id}-a{number}"
        mapping[previous]["children"].append(user_id)
        mapping[user_id] = chatgpt_node(
            user_id, "user", question, parent=previous, create_time=start + number * 60
        )
        mapping[user_id]["children"].append(assistant_id)
        mapping[assistant_id] = chatgpt_node(
            assistant_id,
            "assistant",
            answer,
            parent=user_id,
            create_time=start + number * 60 + 5,
            model=model,
        )
        previous = assistant_id
    return {
        "title": title,
        "create_time": start,
        "update_time": start + len(exchanges) * 60 + 5,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": previous,
        "plugin_ids": None,
        "conversation_id": conversation_id,
        "id": conversation_id,
        "default_model_slug": model,
    }


def claude_conversation(
    name: str,
    messages: list[tuple[str, str]],
    *,
    conversation_id: str | None = None,
    start_iso_minute: int = 0,
) -> dict:
    """Claude.ai conversation; ``messages`` are (sender, text), timestamps one minute apart."""
    conversation_id = conversation_id or _uid(name)
    chat_messages = []
    for number, (sender, text) in enumerate(messages):
        stamp = f"2024-03-13T14:{start_iso_minute + number:02d}:00.000000Z"
        chat_messages.append(
            {
                "uuid": _uid(f"{conversation_id}-{number}"),
                "text": text,
                "content": [
                    {
                        "start_timestamp": stamp,
                        "stop_timestamp": stamp,
                        "type": "text",
                        "text": text,
                        "citations": [],
                    }
                ],
                "sender": sender,
                "created_at": stamp,
                "updated_at": stamp,
                "attachments": [],
                "files": [],
            }
        )
    return {
        "uuid": conversation_id,
        "name": name,
        "created_at": "2024-03-13T14:00:00.000000Z",
        "updated_at": "2024-03-13T15:00:00.000000Z",
        "account": {"uuid": _uid("account")},
        "chat_messages": chat_messages,
    }


def gemini_record(prompt: str, reply_html: str, time_iso: str, *, verb: str = "Prompted") -> dict:
    return {
        "header": "Gemini Apps",
        "title": f"{verb} {prompt}",
        "time": time_iso,
        "products": ["Gemini Apps"],
        "activityControls": ["Gemini Apps Activity"],
        "safeHtmlItem": [{"html": reply_html}],
    }


def openwebui_chat(title: str, branch: list[tuple[str, str]], *, extra_sibling: str | None = None):
    """Open WebUI chat object; with ``extra_sibling`` the first answer has a newer regeneration
    that is NOT the current branch."""
    messages: dict[str, dict] = {}
    previous = None
    ids: list[str] = []
    for number, (role, content) in enumerate(branch):
        message_id = _uid(f"{title}-{number}")
        ids.append(message_id)
        messages[message_id] = {
            "id": message_id,
            "parentId": previous,
            "childrenIds": [],
            "role": role,
            "content": content,
            "timestamp": 1744577557 + number * 30,
            **({"model": "llama3:8b"} if role == "assistant" else {"models": ["llama3:8b"]}),
        }
        if previous:
            messages[previous]["childrenIds"].append(message_id)
        previous = message_id
    if extra_sibling:
        sibling_id = _uid(f"{title}-sibling")
        parent = ids[0]
        messages[sibling_id] = {
            "id": sibling_id,
            "parentId": parent,
            "childrenIds": [],
            "role": "assistant",
            "content": extra_sibling,
            "timestamp": 1744577557 + 999,
            "model": "llama3:8b",
        }
        messages[parent]["childrenIds"].append(sibling_id)
    return {
        "id": "",
        "title": title,
        "models": ["llama3:8b"],
        "params": {},
        "history": {"messages": messages, "currentId": previous},
        "messages": [messages[i] for i in ids],
        "tags": [],
        "timestamp": 1744577557127,
        "files": [],
    }


def write_json(path: Path, data: Any, *, crlf: bool = False, ascii_only: bool = False) -> Path:
    text = json.dumps(data, ensure_ascii=ascii_only, indent=2)
    if crlf:
        text = text.replace("\n", "\r\n")
    path.write_bytes(text.encode("utf-8"))
    return path
