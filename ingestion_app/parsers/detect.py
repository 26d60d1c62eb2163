"""Recognize an export by its content, never by its file name.

Only the first bytes are read (``HEAD_BYTES``), so detection of a 200 MB export costs the same
as detection of a small one. Each format has a signature built from the keys its schema puts
early in the file; anything that matches none of them is ``None`` ("unrecognized format").
"""

from __future__ import annotations

import codecs
import io
import json
import re
from pathlib import Path
from typing import BinaryIO

HEAD_BYTES = 256 * 1024

CHATGPT = "chatgpt"
CLAUDE = "claude"
GEMINI_JSON = "gemini_json"
GEMINI_HTML = "gemini_html"
OPENWEBUI = "openwebui"
LOCAL_MARKDOWN = "local_markdown"
API_LOG = "api_log"
ZIP = "zip"

CONVERSATION_FORMATS = (
    CHATGPT,
    CLAUDE,
    GEMINI_JSON,
    GEMINI_HTML,
    OPENWEBUI,
    LOCAL_MARKDOWN,
    API_LOG,
)

PLATFORM_BY_FORMAT = {
    CHATGPT: "chatgpt",
    CLAUDE: "claude",
    GEMINI_JSON: "gemini",
    GEMINI_HTML: "gemini",
    OPENWEBUI: "openwebui",
    LOCAL_MARKDOWN: "local",
    API_LOG: "api",
}


def read_head(source: Path | str | bytes, size: int = HEAD_BYTES) -> bytes:
    if isinstance(source, bytes | bytearray):
        return bytes(source[:size])
    with open(source, "rb") as handle:
        return handle.read(size)


def decode_head(head: bytes) -> str:
    """Best-effort text of the head: BOM-aware, tolerant of a multi-byte char cut at the end."""
    if head.startswith(codecs.BOM_UTF16_LE) or head.startswith(codecs.BOM_UTF16_BE):
        return head.decode("utf-16", errors="ignore")
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    return head.decode("utf-8", errors="ignore")


def _has(text: str, *keys: str) -> bool:
    return all(f'"{key}"' in text for key in keys)


_JSON_KEY = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:')


def detect_format(source: Path | str | bytes) -> str | None:
    """Name the export format of a file (or of its first bytes), or ``None`` if unrecognized.

    Returns one of ``CONVERSATION_FORMATS`` or ``"zip"`` for an archive the caller must open.
    """
    head = read_head(source)
    if head.startswith(b"PK\x03\x04"):
        return ZIP
    text = decode_head(head).lstrip()
    if not text:
        return None
    first = text[0]
    if first in "[{":
        return _detect_json(text)
    lowered = text[:4096].lower()
    if lowered.startswith("<") or "<html" in lowered:
        return _detect_html(text)
    if _is_session_log(text):
        return LOCAL_MARKDOWN
    return None


def json_damage(source: Path | str | bytes) -> str:
    """Why a JSON-shaped file detection did not recognize fails to parse ("truncated or
    invalid JSON ..."), or "" when it parses or is not JSON. Only a file that fits in the
    detection head is checked: a larger export's keys are in its head, so it was recognized
    and its parser reports the damage."""
    head = read_head(source, HEAD_BYTES + 1)
    if len(head) > HEAD_BYTES:
        return ""
    text = decode_head(head).strip()
    if not text or text[0] not in "[{":
        return ""
    try:
        json.loads(text)
    except ValueError as exc:
        if _json_lines(text):
            return ""  # JSON Lines of a format not read here (a SillyTavern chat): unknown
        line, column = getattr(exc, "lineno", 0), getattr(exc, "colno", 0)
        return f"truncated or invalid JSON (line {line}, column {column}): not a complete export"
    return ""


def _json_lines(text: str) -> bool:
    """Two or more lines, each a complete JSON object or array."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        return all(isinstance(json.loads(line), dict | list) for line in lines)
    except ValueError:
        return False


def _detect_json(text: str) -> str | None:
    keys = set(_JSON_KEY.findall(text))
    if "mapping" in keys and ({"author", "content_type", "current_node"} & keys):
        return CHATGPT
    if "chat_messages" in keys or ("sender" in keys and '"human"' in text and "uuid" in keys):
        return CLAUDE
    if "history" in keys and ({"currentId", "childrenIds", "parentId"} & keys):
        return OPENWEBUI
    if ("header" in keys or "products" in keys) and re.search(
        r'"(header|products)"\s*:\s*\[?\s*"(Gemini|Bard)', text
    ):
        return GEMINI_JSON
    if "safeHtmlItem" in keys and "Gemini" in text:
        return GEMINI_JSON
    if "messages" in keys and "role" in keys and "content" in keys:
        return API_LOG
    if "choices" in keys and "messages" in keys:
        return API_LOG
    # JSON Lines of API calls: every line an object carrying a messages array
    if _first_json_line_has_messages(text):
        return API_LOG
    return None


def _first_json_line_has_messages(text: str) -> bool:
    line = text.split("\n", 1)[0].strip()
    try:
        record = json.loads(line)
    except ValueError:
        return False
    if not isinstance(record, dict):
        return False
    request = record.get("request") if isinstance(record.get("request"), dict) else record
    return isinstance(request.get("messages"), list)


_GEMINI_CELL = re.compile(r'class="[^"]*outer-cell', re.IGNORECASE)


def _detect_html(text: str) -> str | None:
    if _GEMINI_CELL.search(text) and "content-cell" in text and re.search(r"Gemini|Bard", text):
        return GEMINI_HTML
    return None


_SESSION_LOG_MARKERS = ("**Timestamp:**", "**User:**", "**Assistant:**")


def _is_session_log(text: str) -> bool:
    return all(marker in text for marker in _SESSION_LOG_MARKERS)


def open_utf8(path: Path | str) -> BinaryIO:
    """Open a file as a UTF-8 byte stream for ijson: the BOM is skipped, UTF-16 is re-encoded.

    UTF-16 exports are rare (Windows tools); they are decoded in memory because they cannot
    be streamed byte-wise, which is acceptable for their size in practice.
    """
    handle = open(path, "rb")
    start = handle.read(4)
    if start.startswith(codecs.BOM_UTF16_LE) or start.startswith(codecs.BOM_UTF16_BE):
        handle.seek(0)
        data = handle.read().decode("utf-16")
        handle.close()
        return io.BytesIO(data.encode("utf-8"))
    handle.seek(len(codecs.BOM_UTF8) if start.startswith(codecs.BOM_UTF8) else 0)
    return handle


def first_json_char(path: Path | str) -> str:
    """``[`` or ``{`` (list of items or a single object), read without loading the file."""
    with open_utf8(path) as handle:
        while True:
            block = handle.read(4096)
            if not block:
                return ""
            stripped = block.lstrip()
            if stripped:
                return chr(stripped[0])
