"""Headers and tags of imported chunks: LLM (batched, bounded concurrency) or local."""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ingestion_app.chunking.conversations import Chunk, describe_locally
from ingestion_app.parsers import (
    Conversation,
)
from memory_site.providers import ProviderError, get_llm
from memory_site.tokens import count_tokens
from sessions_app.services.usage import usage_record

logger = logging.getLogger(__name__)


HEADER_BATCH_SIZE = 8
HEADER_CONCURRENCY = 4


# --------------------------------------------------------------------------------------------
# Headers and tags: LLM (batched, bounded concurrency) or the local summarizer


# --------------------------------------------------------------------------------------------

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

HEADER_INSTRUCTIONS = (
    "You write retrieval headers for chunks of imported chat conversations. For each chunk, "
    "write a contextual header of 2 to 4 sentences that states what the exchange is about "
    "(topic), what the user was trying to accomplish (intent), any earlier context needed to "
    "understand it, and the platform and date. Be specific: name the concrete subject, tools, "
    "places or people; never write generic text such as 'A conversation about AI'. Also give "
    "1 to 3 short lowercase topic tags (kebab-case phrases). Answer with JSON: "
    '{"chunks": [{"index": <n>, "header": "...", "topics": ["..."]}]}, one entry per chunk.'
)
_CLIP_CHARS = 1500


def describe_chunks(items: list[tuple[Chunk, Conversation]], *, llm=None, user=None) -> None:
    """Fill header and topics of each chunk (redacted conversations only).

    With a configured LLM the chunks are sent in batches of HEADER_BATCH_SIZE, at most
    HEADER_CONCURRENCY requests at a time; any chunk the model fails on (error, missing or
    malformed entry) gets the local summarizer's header, so an import never fails on headers.
    """
    llm = llm or get_llm()
    if not items:
        return
    if getattr(llm, "is_local", True):
        for chunk, conversation in items:
            describe_locally([chunk], conversation)
        return
    batches = [items[i : i + HEADER_BATCH_SIZE] for i in range(0, len(items), HEADER_BATCH_SIZE)]
    with ThreadPoolExecutor(max_workers=HEADER_CONCURRENCY) as pool:
        answers = list(pool.map(lambda batch: _llm_headers(llm, batch), batches))
    usage_in = usage_out = 0
    for batch, (answer, tokens_in, tokens_out) in zip(batches, answers, strict=True):
        usage_in += tokens_in
        usage_out += tokens_out
        for position, (chunk, conversation) in enumerate(batch):
            header, topics = answer.get(position, ("", []))
            chunk.header = header
            chunk.topics = topics
            if not chunk.header or not chunk.topics:
                describe_locally([chunk], conversation)
    if user is not None and (usage_in or usage_out):
        usage_record(
            user=user,
            model=llm.model,
            tokens_in=usage_in,
            tokens_out=usage_out,
            kind="import_headers",
        )


def _llm_headers(
    llm, batch: list[tuple[Chunk, Conversation]]
) -> tuple[dict[int, tuple[str, list[str]]], int, int]:
    payload = []
    for position, (chunk, conversation) in enumerate(batch):
        timestamp = chunk.timestamp
        earlier = [p.user_text[:200] for p in conversation.pairs if p.index < chunk.first_index][
            -3:
        ]
        payload.append(
            {
                "index": position,
                "platform": conversation.platform,
                "date": timestamp.date().isoformat() if timestamp else "",
                "conversation_title": conversation.title or "",
                "turns": chunk.turn_range,
                "earlier_user_prompts": earlier,
                "user": chunk.user_text[:_CLIP_CHARS],
                "assistant": chunk.assistant_text[:_CLIP_CHARS],
            }
        )
    messages = [
        {"role": "system", "content": HEADER_INSTRUCTIONS},
        {"role": "user", "content": json.dumps({"chunks": payload}, ensure_ascii=False)},
    ]
    try:
        result = llm.chat_json(messages, schema=HEADER_SCHEMA, schema_name="chunk_headers")
    except ProviderError as exc:
        logger.warning("header generation failed, using local headers: %s", exc)
        return {}, 0, 0
    answers: dict[int, tuple[str, list[str]]] = {}
    for entry in (result or {}).get("chunks") or []:
        if not isinstance(entry, dict):
            continue
        index = entry.get("index")
        header = entry.get("header")
        topics = entry.get("topics")
        if not isinstance(index, int) or not 0 <= index < len(batch):
            continue
        if not isinstance(header, str) or not header.strip():
            continue
        clean_topics = _clean_topics(topics)
        sentences = [s for s in header.replace("?", ".").replace("!", ".").split(".") if s.strip()]
        if not clean_topics or not 1 <= len(sentences) <= 6:
            continue
        answers[index] = (" ".join(header.split()), clean_topics)
    tokens_in = count_tokens(messages[1]["content"]) + count_tokens(HEADER_INSTRUCTIONS)
    tokens_out = count_tokens(json.dumps(result, ensure_ascii=False)) if result else 0
    return answers, tokens_in, tokens_out


def _clean_topics(topics: Any) -> list[str]:
    if not isinstance(topics, list):
        return []
    cleaned: list[str] = []
    for topic in topics:
        if not isinstance(topic, str):
            continue
        tag = "-".join(topic.lower().replace("_", " ").split())[:64].strip("-")
        if tag and tag not in cleaned:
            cleaned.append(tag)
    return cleaned[:3]
