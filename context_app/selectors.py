"""Retrieval: the one hybrid search over the rag_store, scoped to the caller before ranking.

Vector side: pgvector HNSW cosine with iterative index scans, so user-scoped filters keep their
recall. Keyword side: PostgreSQL full text (`search_vector` GIN, english config) with OR
semantics over the query's words, ranked by ts_rank_cd. The two rankings are fused by
reciprocal rank fusion; an optional recency weight favours newer memories.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from memory_site.providers import get_embedder

SOURCES = ("fact", "chunk", "summary", "document")
MODES = ("hybrid", "semantic", "keyword")
RRF_K = 60
CANDIDATES_PER_SIDE = 50
_WORD = re.compile(r"[\w']+", re.UNICODE)


@dataclass
class SearchFilters:
    project_id: str | None = None
    agent_id: str | None = None
    chat_session_id: str | None = None
    topics: list[str] = field(default_factory=list)
    since: datetime | None = None
    until: datetime | None = None


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


@dataclass
class SearchResult:
    items: list[SearchHit]
    total_tokens_used: int
    query_embedding_ms: float
    search_ms: float


def keyword_query_text(query: str) -> str:
    """Words of the query joined with OR, for websearch_to_tsquery: a question rarely contains
    every word of the memory that answers it, so AND semantics would find almost nothing."""
    words = [w.strip("'") for w in _WORD.findall(query.lower())]
    return " or ".join(w for w in words if w and w != "or")


def _scope_sql(*, user_id: int, app_id: str, sources, filters: SearchFilters) -> tuple[str, list]:
    clauses = ["user_id = %s", "app_id = %s", "source = ANY(%s)"]
    params: list = [user_id, app_id, list(sources)]
    if filters.project_id:
        clauses.append("project_id = %s")
        params.append(filters.project_id)
    if filters.agent_id:
        clauses.append("agent_id = %s")
        params.append(filters.agent_id)
    if filters.chat_session_id:
        clauses.append("chat_session_id = %s")
        params.append(str(filters.chat_session_id))
    if filters.topics:
        clauses.append("topics && %s")
        params.append(list(filters.topics))
    if filters.since:
        clauses.append("occurred_at >= %s")
        params.append(filters.since)
    if filters.until:
        clauses.append("occurred_at <= %s")
        params.append(filters.until)
    return " AND ".join(clauses), params


def _vector_candidates(cursor, *, scope: str, params: list, vector: str, limit: int) -> list[tuple[int, float]]:
    cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(100, limit * 2)])
    cursor.execute(
        f"""SELECT id, 1 - (embedding <=> %s::vector) AS similarity FROM rag_store
            WHERE {scope} AND embedding IS NOT NULL
            ORDER BY embedding <=> %s::vector LIMIT %s""",
        [vector, *params, vector, limit],
    )
    rows = cursor.fetchall()
    # relaxed_order may return rows slightly out of order: re-sort by exact similarity.
    return sorted(rows, key=lambda row: -row[1])


def _keyword_candidates(cursor, *, scope: str, params: list, text: str, limit: int) -> list[tuple[int, float]]:
    if not text:
        return []
    cursor.execute(
        f"""SELECT id, ts_rank_cd(search_vector, q) AS rank
            FROM rag_store, websearch_to_tsquery('english', %s) AS q
            WHERE {scope} AND search_vector @@ q
            ORDER BY rank DESC, id DESC LIMIT %s""",
        [text, *params, limit],
    )
    return cursor.fetchall()


def _load_hits(cursor, ids: list[int], vector: str | None) -> dict[int, dict]:
    if not ids:
        return {}
    similarity_sql = "1 - (embedding <=> %s::vector)" if vector else "NULL::float"
    cursor.execute(
        f"""SELECT id, source, content, header, created_at, occurred_at, metadata, topics,
                   chat_session_id, token_count, {similarity_sql}
            FROM rag_store WHERE id = ANY(%s)""",
        ([vector] if vector else []) + [ids],
    )
    columns = ["id", "source", "content", "header", "created_at", "occurred_at", "metadata", "topics",
               "chat_session_id", "token_count", "similarity"]
    return {row[0]: dict(zip(columns, row, strict=True)) for row in cursor.fetchall()}


def memory_search(
    *,
    user,
    query: str,
    app_id: str = "default",
    top_k: int = 10,
    max_tokens: int | None = 4000,
    min_similarity: float = 0.0,
    sources: list[str] | tuple[str, ...] = SOURCES,
    mode: str = "hybrid",
    filters: SearchFilters | None = None,
    recency_half_life_days: float | None = None,
    query_embedding: list[float] | None = None,
) -> SearchResult:
    """Rank the caller's memories for `query`; never reads another user's or app's rows.

    Items come in fused rank order, at most top_k, stopping before the first item that would
    push the running token total past max_tokens. min_similarity drops items whose cosine
    similarity to the query is lower (not applied in keyword mode). Raises ProviderError when
    the query cannot be embedded (semantic and hybrid modes).
    """
    filters = filters or SearchFilters()
    embed_ms = 0.0
    vector = None
    if mode in ("hybrid", "semantic"):
        if query_embedding is None:
            started = time.perf_counter()
            query_embedding = get_embedder().embed([query])[0]
            embed_ms = (time.perf_counter() - started) * 1000
        vector = "[" + ",".join(f"{x:.7g}" for x in query_embedding) + "]"

    started = time.perf_counter()
    scope, params = _scope_sql(user_id=user.pk, app_id=app_id, sources=sources, filters=filters)
    limit = max(CANDIDATES_PER_SIDE, top_k * 3)
    # SET LOCAL needs a transaction; atomic() reuses the caller's when there is one.
    with transaction.atomic(), connection.cursor() as cursor:
        vector_rows = _vector_candidates(cursor, scope=scope, params=params, vector=vector, limit=limit) if vector else []
        keyword_rows = (
            _keyword_candidates(cursor, scope=scope, params=params, text=keyword_query_text(query), limit=limit)
            if mode in ("hybrid", "keyword")
            else []
        )
        fused: dict[int, float] = {}
        for rank, (item_id, _) in enumerate(vector_rows):
            fused[item_id] = fused.get(item_id, 0.0) + 1.0 / (RRF_K + rank + 1)
        for rank, (item_id, _) in enumerate(keyword_rows):
            fused[item_id] = fused.get(item_id, 0.0) + 1.0 / (RRF_K + rank + 1)
        rows = _load_hits(cursor, list(fused), vector)

    keyword_rank = {item_id: rank for item_id, rank in keyword_rows}
    now = timezone.now()
    hits: list[SearchHit] = []
    for item_id, score in fused.items():
        row = rows.get(item_id)
        if row is None:
            continue
        similarity = row["similarity"]
        if mode != "keyword" and similarity is not None and similarity < min_similarity:
            continue
        if recency_half_life_days:
            age_days = max(0.0, (now - row["occurred_at"]).total_seconds() / 86400)
            score *= 0.5 + 0.5 * math.pow(0.5, age_days / recency_half_life_days)
        hits.append(
            SearchHit(
                id=item_id,
                source=row["source"],
                content=row["content"],
                header=row["header"],
                score=score,
                similarity=similarity,
                keyword_rank=keyword_rank.get(item_id),
                created_at=row["created_at"],
                occurred_at=row["occurred_at"],
                metadata=row["metadata"] or {},
                topics=list(row["topics"] or []),
                chat_session_id=str(row["chat_session_id"]) if row["chat_session_id"] else None,
                token_count=row["token_count"] or 0,
            )
        )
    hits.sort(key=lambda hit: (-hit.score, -(hit.similarity or 0.0), -hit.id))
    packed, used = [], 0
    for hit in hits[:top_k]:
        if max_tokens is not None and used + hit.token_count > max_tokens:
            break
        packed.append(hit)
        used += hit.token_count
    return SearchResult(
        items=packed,
        total_tokens_used=used,
        query_embedding_ms=round(embed_ms, 2),
        search_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def format_for_prompt(items: list[SearchHit]) -> str:
    """The retrieved-knowledge block of the context pack: quoted data, one line per memory."""
    lines = []
    for hit in items:
        when = hit.occurred_at.date().isoformat() if hit.occurred_at else ""
        text = " ".join(hit.content.split())
        lines.append(f'- ({hit.source}, {when}) "{text}"')
    return "\n".join(lines)
