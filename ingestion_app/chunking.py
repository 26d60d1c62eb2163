"""Turn pairs into retrievable chunks (Layer 3), their Markdown form, and document chunking.

Conversation chunks follow the reference: one turn pair per chunk by default; a pair is merged
into the previous chunk only when it cannot stand alone (a "continue", a short clarification
such as "What about forests?", a bare "thanks", or when the previous reply was a bare "OK") and
the merged chunk stays under ``MAX_CHUNK_WORDS``; a single reply is split only when it is over
the limit and made of separately headed sections. Every pair lands in exactly one chunk (a split
pair in all of its parts, and in no other chunk).

A chunk's id is stable: ``<platform>-<conversation key>-<turn range>-<yyyymmdd>`` (plus
``-p<n>`` for the parts of a split reply), where the conversation key hashes the namespace (the
owner), the platform and the source's conversation id. Importing the same export twice yields
the same ids, which is what makes re-imports write nothing.

Document chunking (``chunk_document``) implements the rag-pipeline strategies ``paragraph``,
``sentence``, ``fixed`` and ``semantic`` with character offsets into the source text.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import yaml

from ingestion_app.parsers.base import Conversation, TurnPair, iso_utc
from memory_site.redaction import redact
from memory_site.text.headers import contextual_header
from memory_site.text.keywords import tags
from memory_site.text.words import STOP_WORDS
from memory_site.tokens import count_tokens

MAX_CHUNK_WORDS = 2000
MAX_PAIRS_PER_CHUNK = 4
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

# The summarizer's cost grows with the text; the head of a long reply carries its topic.
HEADER_USER_CHARS = 800
HEADER_ASSISTANT_CHARS = 1200


@dataclass(slots=True)
class Chunk:
    """One retrievable unit: a contextual header plus the full exchange of 1..n turn pairs."""

    chunk_id: str
    conversation_key: str
    pairs: list[TurnPair]
    turn_range: str
    part: int | None = None
    parts: int | None = None
    assistant_override: str | None = None  # the section of a split reply
    header: str = ""
    topics: list[str] = field(default_factory=list)
    frontmatter: dict = field(default_factory=dict)
    token_count: int = 0

    @property
    def first_index(self) -> int:
        return self.pairs[0].index

    @property
    def timestamp(self):
        return next((p.timestamp for p in self.pairs if p.timestamp), None)

    @property
    def user_text(self) -> str:
        return "\n\n".join(p.user_text for p in self.pairs if p.user_text)

    @property
    def assistant_text(self) -> str:
        if self.assistant_override is not None:
            return self.assistant_override
        return "\n\n".join(p.assistant_text for p in self.pairs if p.assistant_text)

    def exchange_markdown(self) -> str:
        """The ``## Exchange`` body: every pair's full text, user then assistant."""
        blocks: list[str] = []
        for pair in self.pairs:
            reply = self.assistant_override if self.assistant_override is not None else None
            blocks.append(f"**User:**\n{pair.user_text}" if pair.user_text else "**User:**\n")
            blocks.append(f"**Assistant:**\n{reply if reply is not None else pair.assistant_text}")
        return "\n\n".join(blocks).strip()

    def embedding_text(self) -> str:
        """Header plus user prompt only: the reply would pull the vector toward its own topic."""
        return f"{self.header}\n\n{self.user_text}".strip()

    def word_count(self) -> int:
        return len(self.user_text.split()) + len(self.assistant_text.split())

    def pair_keys(self) -> list[str]:
        return [pair_key(p) for p in self.pairs]


def pair_key(pair: TurnPair) -> str:
    """Identity of a pair within its conversation: position plus content."""
    return f"{pair.index}:{pair.fingerprint[:16]}"


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


# --------------------------------------------------------------------------------------------
# Redaction
# --------------------------------------------------------------------------------------------


def redact_conversation(conversation: Conversation) -> Conversation:
    """A copy whose title and turn texts are redacted; the original is left untouched.

    Headers, tags, chunk content and embeddings are all made from this copy, so no detected
    personal data or secret reaches the summarizer, the LLM, the embedder or the index.
    """
    pairs = [
        replace(
            pair,
            user_text=redact(pair.user_text) if pair.user_text else "",
            assistant_text=redact(pair.assistant_text) if pair.assistant_text else "",
            attachments=list(pair.attachments),
            message_ids=list(pair.message_ids),
        )
        for pair in conversation.pairs
    ]
    return replace(
        conversation,
        title=redact(conversation.title) if conversation.title else conversation.title,
        system_prompt=redact(conversation.system_prompt) if conversation.system_prompt else None,
        pairs=pairs,
        warnings=list(conversation.warnings),
    )


# --------------------------------------------------------------------------------------------
# Merge and split rules
# --------------------------------------------------------------------------------------------

_CONTINUE = re.compile(
    r"^(?:please\s+|pls\s+|ok(?:ay)?[, ]+|now\s+)?(?:continue|go on|keep going|carry on|go ahead|"
    r"proceed|more|next|finish(?: it)?|and\??|yes(?: please)?|yep|sure|do it|do that|"
    r"go for it|sounds good|next (?:one|part|step|section)|rest|the rest|continue please)"
    r"[\s.!?…]*$",
    re.IGNORECASE,
)
_CLARIFY_START = re.compile(
    r"^(?:what about|how about|and (?:what|how|why|if|the|for|with|in)|what if|"
    r"i meant|i mean|no[, ]+i|not that|actually[, ]|instead[, ]|same (?:for|but|with)|"
    r"but (?:what|how|for|with|in)|also (?:for|with|in)|wait[, ]|sorry[, ]|oops|correction|"
    r"in (?:python|javascript|typescript|java|go|rust|c\+\+|c#|english|dutch|german|french|"
    r"spanish)|shorter|longer|simpler|more detail)",
    re.IGNORECASE,
)
_THANKS = re.compile(
    r"^(?:thanks?(?: you)?|thank you(?: so much| very much)?|thx|ty|great|perfect|cool|nice|"
    r"awesome|got it|ok(?:ay)?|understood|that works|it works|works now|brilliant|excellent)"
    r"(?:[,!. ]+(?:thanks?|thank you|that|it|this|works?|helps?|helped|a lot|so much|"
    r"very much|now|again|!)*)*[\s.!?…😊🙏👍]*$",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening)|yo|hallo|hoi|bonjour|hola)"
    r"(?: there)?[\s.!?,]*$",
    re.IGNORECASE,
)
_ACK_REPLY = re.compile(
    r"^(?:ok(?:ay)?|sure|understood|got it|noted|yes|done|ready|i understand)[\s.!]*$",
    re.IGNORECASE,
)


def _words(text: str) -> int:
    return len(text.split())


def _needs_previous(pair: TurnPair) -> bool:
    """True when the prompt is meaningless without the exchange before it."""
    prompt = pair.user_text.strip()
    if not prompt:
        return False
    words = _words(prompt)
    if words <= 6 and (_CONTINUE.match(prompt) or _THANKS.match(prompt)):
        return True
    return words <= 8 and bool(_CLARIFY_START.match(prompt))


def _cannot_stand_alone(pair: TurnPair) -> bool:
    """True when this exchange is only a preamble to the next one (greeting, bare 'OK')."""
    reply = pair.assistant_text.strip()
    if reply and _words(reply) <= 3 and _ACK_REPLY.match(reply):
        return True
    prompt = pair.user_text.strip()
    return bool(prompt) and _words(prompt) <= 4 and bool(_GREETING.match(prompt))


def group_pairs(pairs: Sequence[TurnPair]) -> list[list[TurnPair]]:
    """Consecutive pairs grouped by the merge rules; order and membership preserved."""
    groups: list[list[TurnPair]] = []
    group_words = 0
    for pair in pairs:
        words = pair.word_count()
        if groups:
            previous = groups[-1]
            consecutive = previous[-1].index + 1 == pair.index
            fits = group_words + words < MAX_CHUNK_WORDS and len(previous) < MAX_PAIRS_PER_CHUNK
            if (
                consecutive
                and fits
                and (_needs_previous(pair) or _cannot_stand_alone(previous[-1]))
            ):
                previous.append(pair)
                group_words += words
                continue
        groups.append([pair])
        group_words = words
    return groups


_HEADING = re.compile(r"^(?:#{1,3} \S.*|\*\*[^*\n]{3,80}\*\*:?)\s*$", re.MULTILINE)


def split_reply(user_text: str, reply: str) -> list[str]:
    """Sections of an over-long reply, packed under the word limit; [reply] if not splittable.

    Only replies over the limit with at least two headed sections are split: a heading is the
    author's own signal that a new topic starts, and cutting anywhere else would leave halves
    that make no sense alone.
    """
    budget = MAX_CHUNK_WORDS - _words(user_text)
    if _words(user_text) + _words(reply) < MAX_CHUNK_WORDS or budget < 200:
        return [reply]
    starts = [m.start() for m in _HEADING.finditer(reply) if not _inside_code(reply, m.start())]
    if len(starts) < 2:
        return [reply]
    bounds = ([0] if starts[0] > 0 else []) + starts + [len(reply)]
    sections = [reply[a:b].strip() for a, b in zip(bounds, bounds[1:], strict=False)]
    parts: list[str] = []
    current = ""
    for section in sections:
        if not section:
            continue
        candidate = f"{current}\n\n{section}".strip() if current else section
        if current and _words(candidate) > budget:
            parts.append(current)
            current = section
        else:
            current = candidate
    if current:
        parts.append(current)
    return parts if len(parts) > 1 else [reply]


def _inside_code(text: str, position: int) -> bool:
    return text.count("```", 0, position) % 2 == 1


# --------------------------------------------------------------------------------------------
# Chunk planning, headers, frontmatter
# --------------------------------------------------------------------------------------------


def plan_chunks(
    conversation: Conversation,
    *,
    namespace: str = "",
    skip_pair_keys: frozenset[str] | set[str] = frozenset(),
) -> list[Chunk]:
    """Chunks (without headers) for the pairs of a conversation not already stored.

    ``skip_pair_keys`` holds ``pair_key`` values covered by earlier imports: those pairs are
    left out and never merged with new ones, so a changed export only adds its new pairs.
    """
    key = conversation_key(
        namespace=namespace,
        platform=conversation.platform,
        conversation_id=conversation.conversation_id,
    )
    if skip_pair_keys:
        fresh = [p for p in conversation.pairs if pair_key(p) not in skip_pair_keys]
    else:  # nothing stored yet: no content hash to compute
        fresh = list(conversation.pairs)
    chunks: list[Chunk] = []
    for group in group_pairs(fresh):
        turn_range = turn_range_of(group[0].index, group[-1].index)
        timestamp = next((p.timestamp for p in group if p.timestamp), None)
        sections = (
            split_reply(group[0].user_text, group[0].assistant_text) if len(group) == 1 else []
        )
        if len(sections) > 1:
            for number, section in enumerate(sections, start=1):
                chunks.append(
                    Chunk(
                        chunk_id=make_chunk_id(
                            platform=conversation.platform,
                            key=key,
                            turn_range=turn_range,
                            timestamp=timestamp,
                            part=number,
                        ),
                        conversation_key=key,
                        pairs=group,
                        turn_range=turn_range,
                        part=number,
                        parts=len(sections),
                        assistant_override=section,
                    )
                )
            continue
        chunks.append(
            Chunk(
                chunk_id=make_chunk_id(
                    platform=conversation.platform,
                    key=key,
                    turn_range=turn_range,
                    timestamp=timestamp,
                ),
                conversation_key=key,
                pairs=group,
                turn_range=turn_range,
            )
        )
    return chunks


def _prior_context(conversation: Conversation, chunk: Chunk) -> str:
    """The user's previous prompts in this conversation, nearest first (at most three)."""
    earlier = [p for p in conversation.pairs if p.index < chunk.first_index and p.user_text]
    recent = earlier[-3:]
    lines = [_first_line(p.user_text, 140) for p in reversed(recent)]
    if not lines:
        return ""
    text = "; ".join(line for line in lines if line)
    if len(earlier) > len(recent):
        text += f" (turn {chunk.first_index} of a longer conversation)"
    return text


def _first_line(text: str, limit: int) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("```"):
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def local_tags(chunk: Chunk, conversation: Conversation) -> list[str]:
    """1-3 topic tags from the user's words (weighted double), the reply and the title."""
    # Same clipped strings as local_header: the summarizer caches its analysis per text.
    user = chunk.user_text[:HEADER_USER_CHARS]
    texts = [user, user, chunk.assistant_text[:HEADER_ASSISTANT_CHARS]]
    topics = tags(texts, k=3)
    if not topics and conversation.title:
        topics = tags([conversation.title], k=1)
    if not topics:
        topics = [conversation.platform]
    return topics


def local_header(chunk: Chunk, conversation: Conversation, topics: list[str]) -> str:
    """Deterministic 2-4 sentence header: platform, title, date, topics, intent, prior turns."""
    timestamp = chunk.timestamp
    return contextual_header(
        user_text=chunk.user_text[:HEADER_USER_CHARS],
        assistant_text=chunk.assistant_text[:HEADER_ASSISTANT_CHARS],
        title=conversation.title or "",
        prior=_prior_context(conversation, chunk),
        platform=conversation.platform,
        date=timestamp.date().isoformat() if timestamp else "",
        topics=topics,
    )


def describe_locally(chunks: Sequence[Chunk], conversation: Conversation) -> None:
    """Fill header and topics of every chunk that has none, with the offline summarizer."""
    for chunk in chunks:
        if not chunk.topics:
            chunk.topics = local_tags(chunk, conversation)
        if not chunk.header:
            chunk.header = local_header(chunk, conversation, chunk.topics)


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


def chunk_conversation(
    conversation: Conversation,
    *,
    namespace: str = "",
    agent_id: str = DEFAULT_AGENT_ID,
    skip_pair_keys: frozenset[str] | set[str] = frozenset(),
    describe: Callable[[Sequence[Chunk], Conversation], None] | None = describe_locally,
) -> list[Chunk]:
    """Plan, describe (header + topics) and stamp frontmatter on a conversation's new chunks.

    ``conversation`` must already be redacted (``redact_conversation``). ``describe`` fills
    headers and topics (the LLM path of the import service passes its own); pass None to leave
    them empty.
    """
    chunks = plan_chunks(conversation, namespace=namespace, skip_pair_keys=skip_pair_keys)
    if describe is not None:
        describe(chunks, conversation)
    for chunk in chunks:
        build_frontmatter(chunk, conversation, agent_id=agent_id)
    return chunks


# Cyclic-GC generation thresholds in the importer's worker processes (CPython's are 700, 10, 10).
WORKER_GC_THRESHOLDS = (20_000, 20, 100)


def prepare_worker_init() -> None:
    """Set up a worker process of the importer's pool before it runs ``prepare_conversations``.

    A worker allocates thousands of short-lived containers per round while the summarizer's
    caches hold many long-lived ones; with CPython's default thresholds the cyclic garbage
    collector rescans those every 700 allocations, which cost about a third of the worker's
    CPU. The modules loaded so far (and the token encoding, loaded here) are frozen out of
    collection and collections run less often; reference counting still frees everything
    the worker drops, so memory stays flat.
    """
    count_tokens("warm up")
    gc.freeze()
    gc.set_threshold(*WORKER_GC_THRESHOLDS)


def prepare_conversations(
    work: Sequence[tuple[Conversation, frozenset[str]]],
    *,
    namespace: str,
    describe: bool = True,
) -> list[tuple[Conversation, list[Chunk]]]:
    """Redact, plan and (locally) describe the new chunks of each (conversation, covered keys).

    Pure CPU work with no database access, so the importer can run it in worker processes
    while the main process parses and stores; returns (redacted conversation, chunks) in the
    order given. With ``describe=False`` headers and topics are left for the caller (LLM).
    """
    prepared: list[tuple[Conversation, list[Chunk]]] = []
    for conversation, covered in work:
        redacted = redact_conversation(conversation)
        chunks = plan_chunks(redacted, namespace=namespace, skip_pair_keys=covered)
        if describe:
            describe_locally(chunks, redacted)
        for chunk in chunks:
            chunk.token_count = count_tokens(chunk.exchange_markdown())
        prepared.append((redacted, chunks))
    return prepared


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


# --------------------------------------------------------------------------------------------
# Document chunking (rag-pipeline.txt)
# --------------------------------------------------------------------------------------------

STRATEGIES = ("paragraph", "sentence", "fixed", "semantic")


@dataclass(slots=True)
class DocumentChunk:
    """A slice of a document: ``text == source[start_offset:end_offset]``."""

    index: int
    text: str
    start_offset: int
    end_offset: int
    strategy: str
    total: int = 0

    def metadata(self) -> dict:
        return {
            "chunk_index": self.index,
            "total_chunks": self.total,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "strategy": self.strategy,
        }


@dataclass(frozen=True, slots=True)
class ChunkingOptions:
    strategy: str = "paragraph"
    max_chunk_size: int = 1000
    min_chunk_size: int = 100
    overlap: int = 50

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}")
        if self.max_chunk_size < 1:
            raise ValueError("max_chunk_size must be positive")
        if not 0 <= self.min_chunk_size <= self.max_chunk_size:
            raise ValueError("min_chunk_size must be between 0 and max_chunk_size")
        if not 0 <= self.overlap < self.max_chunk_size:
            raise ValueError("overlap must be between 0 and max_chunk_size - 1")


def chunk_document(
    text: str,
    options: ChunkingOptions | None = None,
    *,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
) -> list[DocumentChunk]:
    """Split ``text`` into chunks of at most ``max_chunk_size`` characters (plus overlap).

    paragraph: blank-line separated blocks; sentence: sentence boundaries; fixed: windows of
    ``max_chunk_size``; semantic: sentences grouped until the topic shifts (lexical similarity
    of neighbouring sentences, or ``embed`` similarity when given). Units too large are cut at
    word boundaries; pieces under ``min_chunk_size`` are merged into a neighbour. Each chunk
    after the first starts up to ``overlap`` characters early (on a word boundary) so context
    is not lost at the cut.
    """
    options = options or ChunkingOptions()
    if not text.strip():
        return []
    if options.strategy == "fixed":
        spans = _fixed_spans(text, 0, len(text), options.max_chunk_size)
    else:
        if options.strategy == "paragraph":
            units = _paragraph_units(text)
        else:
            units = _sentence_units(text)
        if options.strategy == "semantic":
            spans = _semantic_spans(text, units, options, embed)
        else:
            spans = _pack(text, units, options.max_chunk_size)
    spans = _merge_small(text, spans, options)
    spans = _with_overlap(text, spans, options.overlap)
    chunks = [
        DocumentChunk(
            index=i, text=text[a:b], start_offset=a, end_offset=b, strategy=options.strategy
        )
        for i, (a, b) in enumerate(spans)
    ]
    for chunk in chunks:
        chunk.total = len(chunks)
    return chunks


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _paragraph_units(text: str) -> list[tuple[int, int]]:
    units: list[tuple[int, int]] = []
    position = 0
    for match in re.finditer(r"\n[ \t]*\n", text):
        units.append(_trim(text, position, match.start()))
        position = match.end()
    units.append(_trim(text, position, len(text)))
    return [(a, b) for a, b in units if b > a]


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"')\]]*\s+|\n[ \t]*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")


def _sentence_units(text: str) -> list[tuple[int, int]]:
    units: list[tuple[int, int]] = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        units.append(_trim(text, position, match.start()))
        position = match.end()
    units.append(_trim(text, position, len(text)))
    return [(a, b) for a, b in units if b > a]


def _fixed_spans(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Windows of at most ``size`` characters, cut at the last whitespace when there is one."""
    spans: list[tuple[int, int]] = []
    position = start
    while position < end:
        stop = min(position + size, end)
        if stop < end:
            cut = text.rfind(" ", position + size // 2, stop)
            cut = max(cut, text.rfind("\n", position + size // 2, stop))
            if cut > position:
                stop = cut
        a, b = _trim(text, position, stop)
        if b > a:
            spans.append((a, b))
        position = stop
    return spans


def _pack(text: str, units: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """Greedy packing of consecutive units into spans of at most ``size`` characters."""
    spans: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for a, b in units:
        if b - a > size:
            if current:
                spans.append(current)
                current = None
            spans.extend(_fixed_spans(text, a, b, size))
            continue
        if current and b - current[0] <= size:
            current = (current[0], b)
        else:
            if current:
                spans.append(current)
            current = (a, b)
    if current:
        spans.append(current)
    return spans


_TOKEN = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


def _bag(text: str) -> Counter:
    return Counter(w for w in (t.lower() for t in _TOKEN.findall(text)) if w not in STOP_WORDS)


def _cosine(a: Sequence[float] | Counter, b: Sequence[float] | Counter) -> float:
    if isinstance(a, Counter):
        dot = sum(count * b.get(word, 0) for word, count in a.items())
        norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    else:
        dot = sum(x * y for x, y in zip(a, b, strict=False))
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _semantic_spans(
    text: str,
    units: list[tuple[int, int]],
    options: ChunkingOptions,
    embed: Callable[[list[str]], list[list[float]]] | None,
) -> list[tuple[int, int]]:
    """Sentences grouped until similarity to the running group drops below its typical level."""
    if len(units) <= 1:
        return _pack(text, units, options.max_chunk_size)
    sentences = [text[a:b] for a, b in units]
    vectors: list = embed(sentences) if embed else [_bag(s) for s in sentences]
    # Similarity of each sentence to a window of the previous two (one sentence is too noisy).
    similarities: list[float] = []
    for i in range(1, len(units)):
        if embed:
            window = [sum(vals) for vals in zip(*vectors[max(0, i - 2) : i], strict=False)]
        else:
            window = sum((vectors[j] for j in range(max(0, i - 2), i)), Counter())
        similarities.append(_cosine(vectors[i], window))
    mean = sum(similarities) / len(similarities)
    spread = math.sqrt(sum((s - mean) ** 2 for s in similarities) / len(similarities))
    threshold = mean - 0.5 * spread
    spans: list[tuple[int, int]] = []
    current = units[0]
    for i, (a, b) in enumerate(units[1:], start=1):
        shift = similarities[i - 1] < threshold and current[1] - current[0] >= (
            options.min_chunk_size
        )
        paragraph_break = "\n\n" in text[current[1] : a]
        too_big = b - current[0] > options.max_chunk_size
        if too_big or (shift and (paragraph_break or similarities[i - 1] < threshold / 2)):
            spans.append(current)
            current = (a, b)
        else:
            current = (current[0], b)
    spans.append(current)
    final: list[tuple[int, int]] = []
    for a, b in spans:
        final.extend(
            _fixed_spans(text, a, b, options.max_chunk_size)
            if b - a > options.max_chunk_size
            else [(a, b)]
        )
    return final


def _merge_small(
    text: str, spans: list[tuple[int, int]], options: ChunkingOptions
) -> list[tuple[int, int]]:
    """Fold spans shorter than min_chunk_size into a neighbour when the result still fits."""
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and (
            (
                b - a < options.min_chunk_size
                or merged[-1][1] - merged[-1][0] < options.min_chunk_size
            )
            and b - merged[-1][0] <= options.max_chunk_size
        ):
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def _with_overlap(text: str, spans: list[tuple[int, int]], overlap: int) -> list[tuple[int, int]]:
    if overlap <= 0:
        return spans
    result = spans[:1]
    for a, b in spans[1:]:
        start = max(0, a - overlap)
        # begin the overlap on a word boundary so no chunk starts mid-word
        space = text.find(" ", start, a)
        if space != -1 and space + 1 < a:
            start = space + 1
        elif start > 0 and not text[start - 1].isspace():
            start = a
        result.append(_trim(text, start, b))
    return result
