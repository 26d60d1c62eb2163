"""Chunk ids, the reference frontmatter and the Markdown file of a chunk.

A chunk's id is stable: ``<platform>-<conversation key>-<turn range>-<yyyymmdd>`` (plus
``-p<n>`` for the parts of a split reply), where the conversation key hashes the namespace (the
owner), the platform and the source's conversation id. Importing the same export twice yields
the same ids, which is what makes re-imports write nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

import yaml

from ingestion_app.parsers.base import Conversation, iso_utc

if TYPE_CHECKING:
    from ingestion_app.chunking.conversations import Chunk

DEFAULT_AGENT_ID = "external"

FRONTMATTER_FIELDS = (
    "source_file",
    "source_platform",
    "model_used",
    "timestamp",
    "conversation_title",
    "turn_range",
    "topics",
    "chunk_id",
    "agent_id",
)


def conversation_key(*, namespace: str, platform: str, conversation_id: str) -> str:
    digest = hashlib.sha1(f"{namespace}\x1f{platform}\x1f{conversation_id}".encode()).hexdigest()
    return digest[:10]


def turn_range_of(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def make_chunk_id(
    *,
    platform: str,
    key: str,
    turn_range: str,
    timestamp,
    part: int | None = None,
    revision: int = 0,
) -> str:
    day = timestamp.strftime("%Y%m%d") if timestamp else "00000000"
    chunk_id = f"{platform}-{key}-{turn_range}-{day}"
    if part is not None:
        chunk_id += f"-p{part}"
    if revision:
        chunk_id += f"-r{revision}"
    return chunk_id


def build_frontmatter(
    chunk: Chunk, conversation: Conversation, *, agent_id: str = DEFAULT_AGENT_ID
) -> dict:
    """The nine reference fields, in the reference order, all strings except ``topics``."""
    models = [p.model for p in chunk.pairs if p.model]
    frontmatter = {
        "source_file": conversation.source_file,
        "source_platform": conversation.platform,
        "model_used": models[-1] if models else (conversation.model or "unknown"),
        "timestamp": iso_utc(chunk.timestamp) or "",
        "conversation_title": conversation.title or "",
        "turn_range": chunk.turn_range,
        "topics": list(chunk.topics),
        "chunk_id": chunk.chunk_id,
        "agent_id": agent_id or DEFAULT_AGENT_ID,
    }
    chunk.frontmatter = frontmatter
    return frontmatter


# --------------------------------------------------------------------------------------------
# Markdown with YAML frontmatter
# --------------------------------------------------------------------------------------------

try:  # libyaml is much faster; the pure-Python loader gives identical results
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


_PLAIN_SCALAR = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
_YAML_KEYWORDS = frozenset("y n yes no on off true false null".split())
# Characters a YAML reader treats as line breaks or refuses, escaped inside quoted scalars.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


def _yaml_scalar(value: object) -> str:
    text = "" if value is None else str(value)
    if _PLAIN_SCALAR.fullmatch(text) and text.lower() not in _YAML_KEYWORDS:
        return text
    # A JSON string is a valid YAML double-quoted scalar with the same escapes.
    quoted = json.dumps(text, ensure_ascii=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def dump_frontmatter(frontmatter: dict) -> str:
    """YAML that any parser (1.1 or 1.2) reads back to the same strings.

    Written by hand rather than by a YAML library: every value is a string (or ``topics``, a
    list of strings); anything that is not a plain word is double-quoted JSON-style, so dates,
    numbers, "yes"/"no", colons and quotes can never change type or meaning on the way back.
    """
    ordered = {key: frontmatter.get(key) for key in FRONTMATTER_FIELDS}
    ordered.update({k: v for k, v in frontmatter.items() if k not in ordered})
    lines = []
    for key, value in ordered.items():
        if isinstance(value, list | tuple):
            lines.append(f"{key}: [{', '.join(_yaml_scalar(item) for item in value)}]")
        else:
            lines.append(f"{key}: {_yaml_scalar(value)}")
    return "\n".join(lines) + "\n"


def frontmatter_from_metadata(metadata: dict) -> dict:
    """The nine frontmatter fields of a stored chunk, from its metadata JSON."""
    frontmatter = {key: metadata.get(key) for key in FRONTMATTER_FIELDS}
    frontmatter["topics"] = list(frontmatter.get("topics") or [])
    return frontmatter


def render_markdown(*, frontmatter: dict, header: str, exchange: str) -> str:
    """The reference chunk file: frontmatter, ``## Context`` header, ``## Exchange`` body."""
    return (
        f"---\n{dump_frontmatter(frontmatter)}---\n\n"
        f"## Context\n\n{header.strip()}\n\n"
        f"## Exchange\n\n{exchange.strip()}\n"
    )


def chunk_markdown(chunk: Chunk) -> str:
    return render_markdown(
        frontmatter=chunk.frontmatter, header=chunk.header, exchange=chunk.exchange_markdown()
    )


class ChunkFormatError(ValueError):
    """A chunk file does not follow the frontmatter + Context + Exchange layout."""


_FRONTMATTER_BLOCK = re.compile(r"\A---\n(.*?\n)---\n", re.DOTALL)


def parse_markdown(text: str) -> tuple[dict, str, str]:
    """(frontmatter, header, exchange) of a chunk file; raises ChunkFormatError if malformed."""
    match = _FRONTMATTER_BLOCK.match(text)
    if not match:
        raise ChunkFormatError("missing YAML frontmatter")
    try:
        frontmatter = yaml.load(match.group(1), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise ChunkFormatError(f"frontmatter is not valid YAML: {exc}") from exc
    if not isinstance(frontmatter, dict):
        raise ChunkFormatError("frontmatter is not a mapping")
    missing = [key for key in FRONTMATTER_FIELDS if key not in frontmatter]
    if missing:
        raise ChunkFormatError(f"frontmatter lacks {', '.join(missing)}")
    body = text[match.end() :]
    context_at = body.find("## Context\n")
    exchange_at = body.find("\n## Exchange\n")
    if context_at < 0 or exchange_at < 0:
        raise ChunkFormatError("missing ## Context or ## Exchange section")
    header = body[context_at + len("## Context\n") : exchange_at].strip()
    exchange = body[exchange_at + len("\n## Exchange\n") :].strip()
    return frontmatter, header, exchange


def chunks_unparseable(rows: Sequence[tuple[str, dict, str, str]]) -> list[str]:
    """Ids of the chunks whose Markdown file would not read back: each row is (chunk id,
    frontmatter, header, head of the exchange); the file is rendered and parsed again, and
    the parsed frontmatter must equal the given one (with this chunk id) and the header and
    exchange must not be empty. Pure CPU (the import's verification runs it in its workers)."""
    unparseable: list[str] = []
    for chunk_id, expected, header, exchange_head in rows:
        try:
            parsed, parsed_header, parsed_exchange = parse_markdown(
                render_markdown(frontmatter=expected, header=header, exchange=exchange_head)
            )
        except ValueError:
            unparseable.append(chunk_id)
            continue
        if (
            parsed != expected
            or parsed.get("chunk_id") != chunk_id
            or not parsed_header
            or not parsed_exchange
        ):
            unparseable.append(chunk_id)
    return unparseable


def chunks_verify(
    rows: Sequence[tuple[str, str, str, str]],
) -> tuple[list[str], list[tuple[str, str, str]]]:
    """`chunks_unparseable` over stored chunks whose metadata is still JSON text (each row:
    chunk id, metadata JSON, header, head of the exchange), and which turn pairs each one
    holds: (conversation key, pair key, chunk id without the part suffix of a split reply).
    Pure CPU: the import's verification runs it in its workers."""
    checked: list[tuple[str, dict, str, str]] = []
    owners: list[tuple[str, str, str]] = []
    for chunk_id, metadata_json, header, exchange_head in rows:
        metadata = json.loads(metadata_json) if metadata_json else {}
        owner = chunk_id.rsplit("-p", 1)[0] if metadata.get("part") else chunk_id
        conversation = metadata.get("conversation_key", "")
        owners.extend((conversation, key, owner) for key in metadata.get("pair_keys") or [])
        checked.append((chunk_id, frontmatter_from_metadata(metadata), header, exchange_head))
    return chunks_unparseable(checked), owners


def _slug(text: str, limit: int = 40) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "chat"


def chunk_filename(frontmatter: dict) -> str:
    """``YYYY-MM-DD_HH-MM_session-<id>_pair-<NNN>_<topic-slug>.md`` as the reference names it.

    The session id is the conversation key inside the chunk id; the pair number is the first
    pair of the range, with ``-p<n>`` for the parts of a split reply.
    """
    timestamp = str(frontmatter.get("timestamp") or "")
    date = timestamp[:10] if len(timestamp) >= 10 else "0000-00-00"
    clock = timestamp[11:16].replace(":", "-") if len(timestamp) >= 16 else "00-00"
    chunk_id = str(frontmatter.get("chunk_id") or "")
    pieces = chunk_id.split("-")
    session = pieces[1][:8] if len(pieces) > 1 else _slug(chunk_id, 8)
    first = str(frontmatter.get("turn_range") or "0").split("-")[0]
    pair = f"{int(first):03d}" if first.isdigit() else "000"
    part = re.search(r"-p(\d+)(?:-r\d+)?$", chunk_id)
    if part:
        pair += f"-p{part.group(1)}"
    topics = frontmatter.get("topics") or []
    slug = _slug(str(topics[0])) if topics else "chat"
    return f"{date}_{clock}_session-{session}_pair-{pair}_{slug}.md"
