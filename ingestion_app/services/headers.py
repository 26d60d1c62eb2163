"""Contextual headers and topic tags of turn-pair chunks: the one generator for every writer.

Imports (batches of chunks) and live exchanges (one chunk, inline or by the backfill task)
ask the model the same way: one instruction, one JSON schema (a list of chunks, so a batch
and a single exchange are the same call), one cleaning rule for headers and topics. The
model's header is always redacted: a model may echo PII it inferred, and the header is
stored, embedded and injected into prompts. Offline, or for any chunk the model fails on,
the deterministic local header and tags of ``ingestion_app.chunking`` are used.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ingestion_app.chunking.conversations import (
    HEADER_ASSISTANT_CHARS,
    HEADER_USER_CHARS,
    Chunk,
    describe_locally,
)
from ingestion_app.parsers.base import Conversation
from memory_site.providers import LLM, JsonResult, ProviderError, model_or_offline
from mnemo_text.redaction import redact
from mnemo_text.sentences import sentence_spans
from sessions_app.services.usage import usage_record_json

logger = logging.getLogger(__name__)

HEADER_BATCH_SIZE = 8
HEADER_CONCURRENCY = 4
# Earlier user prompts shown as prior context, each clipped to this many characters.
PRIOR_PROMPTS = 3
PRIOR_PROMPT_CHARS = 200
HEADER_MAX_SENTENCES = 4
HEADER_MAX_CHARS = 800
MAX_TOPICS = 3
TOPIC_MAX_CHARS = 40

HEADER_SCHEMA = {
    "type": "object",
    "properties": {
        "chunks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "header": {"type": "string"},
                    "topics": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["index", "header", "topics"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["chunks"],
    "additionalProperties": False,
}
HEADER_SCHEMA_NAME = "chunk_headers"

HEADER_INSTRUCTIONS = (
    "You write retrieval headers for chunks of chat conversations. Each chunk will be read by a "
    "model that sees it out of context. For each chunk, write a contextual header of 2 to 4 "
    "sentences that states what the exchange is about (topic), what the user was trying to "
    "accomplish (intent), any earlier context needed to understand it, and the platform and "
    "date. Be specific: name the concrete subject, tools, places or people; never write generic "
    "text such as 'A conversation about AI'. Also give 1 to 3 short lowercase topic tags "
    '(kebab-case phrases). Answer with JSON: {"chunks": [{"index": <n>, "header": "...", '
    '"topics": ["..."]}]}, one entry per chunk.'
)


@dataclass
class HeaderAnswers:
    """The model's usable (header, topics) by position in the batch, and the call's usage."""

    by_index: dict[int, tuple[str, list[str]]]
    result: JsonResult


def header_messages(items: Sequence[tuple[Chunk, Conversation]]) -> list[dict]:
    """The request for a batch of (chunk, redacted conversation): instruction + JSON payload."""
    payload = []
    for position, (chunk, conversation) in enumerate(items):
        timestamp = chunk.timestamp
        earlier = [
            p.user_text.strip()[:PRIOR_PROMPT_CHARS]
            for p in conversation.pairs
            if p.index < chunk.first_index and p.user_text
        ][-PRIOR_PROMPTS:]
        payload.append(
            {
                "index": position,
                "platform": conversation.platform,
                "date": timestamp.date().isoformat() if timestamp else "",
                "conversation_title": conversation.title or "",
                "turns": chunk.turn_range,
                "earlier_user_prompts": earlier,
                "user": chunk.user_text[:HEADER_USER_CHARS],
                "assistant": chunk.assistant_text[:HEADER_ASSISTANT_CHARS],
            }
        )
    return [
        {"role": "system", "content": HEADER_INSTRUCTIONS},
        {"role": "user", "content": json.dumps({"chunks": payload}, ensure_ascii=False)},
    ]


def header_clean(header: object) -> str:
    """At most four sentences and 800 characters on one line, redacted; "" if unusable."""
    if not isinstance(header, str):
        return ""
    header = re.sub(r"\s+", " ", header).strip()
    kept = sentence_spans(header)[:HEADER_MAX_SENTENCES]
    return redact(" ".join(header[start:end] for start, end in kept)[:HEADER_MAX_CHARS])


def topics_clean(topics: object) -> list[str]:
    """Up to three distinct kebab-case tags of 2 to 40 word characters; others are dropped."""
    if not isinstance(topics, list):
        return []
    cleaned: list[str] = []
    for topic in topics:
        if not isinstance(topic, str):
            continue
        tag = re.sub(r"[^\w]+", "-", topic.lower()).strip("-_")[:TOPIC_MAX_CHARS].strip("-")
        if len(tag) >= 2 and tag not in cleaned:
            cleaned.append(tag)
    return cleaned[:MAX_TOPICS]


def headers_ask(llm: LLM, messages: list[dict], *, count: int) -> HeaderAnswers:
    """One model call for a batch of ``count`` chunks. Entries that are malformed, out of
    range or have an empty header are left out. Raises ProviderError if the call fails."""
    result = llm.chat_json(messages, schema=HEADER_SCHEMA, schema_name=HEADER_SCHEMA_NAME)
    by_index: dict[int, tuple[str, list[str]]] = {}
    entries = result.data.get("chunks")
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        index = entry.get("index")
        if not isinstance(index, int) or not 0 <= index < count or index in by_index:
            continue
        header = header_clean(entry.get("header"))
        if header:
            by_index[index] = (header, topics_clean(entry.get("topics")))
    return HeaderAnswers(by_index=by_index, result=result)


def chunks_describe(
    items: list[tuple[Chunk, Conversation]], *, llm: LLM | None = None, user=None
) -> None:
    """Fill header and topics of each chunk (redacted conversations only).

    With a configured model the chunks are sent in batches of HEADER_BATCH_SIZE, at most
    HEADER_CONCURRENCY requests at a time, with one usage row (kind "import_headers") for
    the whole call; any chunk the model fails on (error, missing or malformed entry) gets the
    local header or tags, so a caller never fails on headers.
    """
    if items:
        model_or_offline(
            lambda llm: _describe_with_model(llm, items, user=user),
            lambda: _describe_offline(items),
            llm=llm,
        )


def _describe_offline(items: list[tuple[Chunk, Conversation]]) -> None:
    for chunk, conversation in items:
        describe_locally([chunk], conversation)


def _describe_with_model(llm: LLM, items: list[tuple[Chunk, Conversation]], *, user) -> None:
    batches = [items[i : i + HEADER_BATCH_SIZE] for i in range(0, len(items), HEADER_BATCH_SIZE)]
    with ThreadPoolExecutor(max_workers=HEADER_CONCURRENCY) as pool:
        answers = list(pool.map(lambda batch: _batch_ask(llm, batch), batches))
    tokens_in = tokens_out = 0
    for batch, answer in zip(batches, answers, strict=True):
        if answer is not None:
            tokens_in += answer.result.tokens_in
            tokens_out += answer.result.tokens_out
        for position, (chunk, conversation) in enumerate(batch):
            header, topics = answer.by_index.get(position, ("", [])) if answer else ("", [])
            chunk.header, chunk.topics = header, topics
            if not chunk.header or not chunk.topics:
                describe_locally([chunk], conversation)
    if user is not None and (tokens_in or tokens_out):
        usage_record_json(
            user=user,
            kind="import_headers",
            result=JsonResult(data={}, model=llm.model, tokens_in=tokens_in, tokens_out=tokens_out),
        )


def _batch_ask(llm: LLM, batch: list[tuple[Chunk, Conversation]]) -> HeaderAnswers | None:
    try:
        return headers_ask(llm, header_messages(batch), count=len(batch))
    except ProviderError as exc:
        logger.warning("header generation failed, using local headers: %s", exc)
        return None
