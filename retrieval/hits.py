"""What a search returns: `SearchHit`, one result as the API, MCP, pages and the pack see it,
and `hits_build`, which turns the packed candidates into hits (an exchange's two turns as one
result, its signals as `why`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from memory_site.tokens import stored_or_counted
from retrieval.candidates import Candidate


@dataclass
class SearchHit:
    id: int
    source: str
    content: str
    header: str
    score: float
    similarity: float | None
    keyword_rank: float | None
    created_at: datetime
    occurred_at: datetime
    metadata: dict
    topics: list[str]
    chat_session_id: str | None
    token_count: int
    source_message_ids: list[int] = field(default_factory=list)
    # How sure the ranking is that the item is about the query, in [0, 1] (see memory_search).
    relevance: float = 0.0
    # Why it matched: [{"signal": "keyword"|"vector"|"entity"|"recency", "rank", "score"}].
    why: list[dict] = field(default_factory=list)
    # Set when a later memory about the same subject says otherwise: {"by": id, "occurred_at",
    # "by_occurred_at"} (both dates shown to the reader).
    superseded: dict | None = None
    # Set when the content was cut to the passage that matches: {"start", "end", "length"}.
    trimmed: dict | None = None
    bucket: str = ""


def hits_build(packed: list[Candidate]) -> list[SearchHit]:
    """The packed candidates as search hits, an exchange's two turns as one result in the
    order they were said (all read already by `candidates_load`)."""
    hits = []
    for candidate in packed:
        content, message_ids, tokens = candidate.content, list(candidate.source_message_ids), 0
        for other in candidate.merged:
            first_said = other.occurred_epoch < candidate.occurred_epoch or (
                other.occurred_epoch == candidate.occurred_epoch
                and (other.position or 0) < (candidate.position or 0)
            )
            content = f"{other.content}\n{content}" if first_said else f"{content}\n{other.content}"
            message_ids = sorted({*message_ids, *other.source_message_ids})
            tokens += stored_or_counted(other.token_count, other.content)
        # Django's psycopg setup hands raw-cursor jsonb back as text.
        metadata = candidate.metadata
        metadata = json.loads(metadata) if isinstance(metadata, str) else metadata or {}
        hits.append(
            SearchHit(
                id=candidate.id,
                source=candidate.source,
                content=content,
                header=candidate.header,
                score=candidate.score,
                similarity=candidate.similarity,
                keyword_rank=candidate.keyword_score,
                created_at=candidate.created_at,
                occurred_at=candidate.occurred_at,
                metadata=metadata,
                topics=list(candidate.topics),
                chat_session_id=candidate.chat_session_id,
                token_count=stored_or_counted(candidate.token_count, candidate.content) + tokens,
                source_message_ids=message_ids,
                relevance=round(candidate.relevance, 4),
                why=_why(candidate),
                bucket=candidate.bucket,
            )
        )
    return hits


def _why(candidate: Candidate) -> list[dict]:
    """The signals that put the item where it is, strongest first (the API's `why`)."""
    why = []
    if candidate.keyword_score is not None:
        why.append(
            {
                "signal": "keyword",
                "rank": candidate.keyword_rank,
                "score": round(candidate.keyword_score, 4),
            }
        )
    if candidate.similarity is not None and (candidate.vector_rank is not None or not why):
        why.append(
            {
                "signal": "vector",
                "rank": candidate.vector_rank,
                "score": round(candidate.similarity, 4),
            }
        )
    if candidate.entity_rank is not None:
        why.append(
            {
                "signal": "entity",
                "rank": candidate.entity_rank,
                "score": round(candidate.entity_score or 0.0, 4),
            }
        )
    if candidate.recency_factor is not None:
        why.append({"signal": "recency", "rank": None, "score": round(candidate.recency_factor, 4)})
    return why
