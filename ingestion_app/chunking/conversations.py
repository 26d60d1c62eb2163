"""Conversations into turn-pair chunks: redaction, merge/split rules, plans, local headers.

Conversation chunks follow the reference: one turn pair per chunk by default; a pair is merged
into the previous chunk only when it cannot stand alone (a "continue", a short clarification
such as "What about forests?", a bare "thanks", or when the previous reply was a bare "OK") and
the merged chunk stays under ``MAX_CHUNK_WORDS``; a single reply is split only when it is over
the limit and made of separately headed sections. Every pair lands in exactly one chunk (a split
pair in all of its parts, and in no other chunk).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ingestion_app.chunking.markdown import (
    DEFAULT_AGENT_ID,
    build_frontmatter,
    conversation_key,
    make_chunk_id,
    turn_range_of,
)
from ingestion_app.chunking.passages import PassageText
from ingestion_app.parsers.base import Conversation, TurnPair
from mnemo_text.categories import TextCues
from mnemo_text.headers import contextual_header
from mnemo_text.keywords import tags
from mnemo_text.redaction import redact

MAX_CHUNK_WORDS = 2000
MAX_PAIRS_PER_CHUNK = 4
# The summarizer's cost grows with the text; the head of a long reply carries its topic (and
# the reply's passages are searched on their own), so a header reads only the start of each
# side (figures in bench/RESULTS.md).
HEADER_USER_CHARS = 800
HEADER_ASSISTANT_CHARS = 600


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
    # Planned by the importer's workers (`prepare_conversations`): the cues of the exchange's
    # text and the passages of its long messages (ingestion_app.chunking.passages).
    cues: TextCues | None = None
    passages: list[PassageText] | None = None

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
