"""Reads of the rag_store and of the commit bookkeeping, always scoped to the caller."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import BooleanField, Case, Count, F, Func, Q, QuerySet, Value, When
from pgvector.django import CosineDistance

from ingestion_app.models import FactHistory, MemoryCommitLog, MemoryItem, ProjectContext
from memory_site.errors import NotFound
from mnemo_text.accents import fold_accents
from sessions_app.models import ChatSession


def memories_for_user(
    *,
    user,
    project_id: str | None = None,
    source: str | None = None,
    chat_session_id: uuid.UUID | str | None = None,
    app_id: str | None = None,
    q: str | None = None,
    include_message_items: bool = False,
) -> QuerySet[MemoryItem]:
    """The caller's memories, newest first, or best text match first when `q` is given.

    Retrieval items that repeat part of another memory are left out unless asked for: the
    per-message items (granularity "message", written beside each turn-pair chunk so search
    can return single turns) and an import's passages of long replies (granularity
    "passage", beside their exchange's chunk). A person browsing memories sees the chunk.

    `q` is a web-style full-text query (`websearch_to_tsquery('english', q)`) over header and
    content; a case-insensitive substring match on content is OR-ed in so that partial words
    ("Berl") and stop-word-only queries ("the who") still find what the user typed.
    """
    queryset = MemoryItem.objects.filter(user=user).defer("embedding", "raw_content")
    if not include_message_items:
        queryset = queryset.exclude(metadata__contains={"granularity": "message"}).exclude(
            metadata__contains={"granularity": "passage"}
        )
    if project_id:
        queryset = queryset.filter(project_id=project_id)
    if source:
        queryset = queryset.filter(source=source)
    if chat_session_id:
        queryset = queryset.filter(chat_session_id=chat_session_id)
    if app_id:
        queryset = queryset.filter(app_id=app_id)
    if q:
        query = SearchQuery(fold_accents(q), search_type="websearch", config="english")
        queryset = (
            queryset.filter(Q(search_vector=query) | Q(content__icontains=q))
            .annotate(rank=SearchRank(F("search_vector"), query))
            .order_by("-rank", "-created_at", "-id")
        )
    else:
        queryset = queryset.order_by("-created_at", "-id")
    return queryset


def memory_get_for_user(*, user, memory_id: int, lock: bool = False) -> MemoryItem:
    """The caller's memory item, or NotFound: another user's item is indistinguishable from none.

    With lock=True the row is locked (SELECT ... FOR UPDATE) for the current transaction.
    """
    queryset = MemoryItem.objects.filter(user=user)
    if lock:
        queryset = queryset.select_for_update()
    try:
        return queryset.get(id=memory_id)
    except (MemoryItem.DoesNotExist, ValueError, TypeError):
        raise NotFound(
            f"Memory {memory_id} not found.", code="memory_not_found", field="memory_id"
        ) from None


def memory_ids_present(*, user, ids) -> set[int]:
    """Which of `ids` are still memories of `user` (not deleted meanwhile)."""
    if not ids:
        return set()
    return set(MemoryItem.objects.filter(user=user, id__in=list(ids)).values_list("id", flat=True))


def memory_history(*, memory: MemoryItem) -> QuerySet[FactHistory]:
    """Every recorded change of one memory, oldest first."""
    return FactHistory.objects.filter(memory=memory).order_by("created_at", "id")


@dataclass(frozen=True)
class FactNeighbour:
    id: int
    content: str
    similarity: float


def vector_literal(embedding) -> str:
    """A pgvector literal ('[0.1,...]') of an embedding, 7 significant digits: what every
    vector query on the store sends (float32 precision, a third of repr's length)."""
    return "[" + ",".join(f"{x:.7g}" for x in embedding) + "]"


def facts_nearest(
    *, user, embedding: list[float], limit: int = 5, min_similarity: float = 0.0
) -> list[FactNeighbour]:
    """The caller's stored facts closest to `embedding` (cosine), most similar first."""
    return facts_nearest_many(
        user=user, embeddings=[embedding], limit=limit, min_similarity=min_similarity
    )[0]


def facts_nearest_many(
    *, user, embeddings: list[list[float]], limit: int = 5, min_similarity: float = 0.0
) -> list[list[FactNeighbour]]:
    """For each embedding, the caller's stored facts closest to it (cosine), most similar
    first, in one query.

    Uses the HNSW index with iterative scans so the per-user filter does not starve the
    result, then re-sorts by exact similarity. Sees uncommitted rows of the caller's own
    transaction.
    """
    if not embeddings:
        return []
    nearest = [
        MemoryItem.objects.filter(user=user, source=MemoryItem.Source.FACT, embedding__isnull=False)
        .annotate(position=Value(position), distance=CosineDistance("embedding", embedding))
        .order_by("distance")
        .values_list("position", "id", "content", "distance")[:limit]
        for position, embedding in enumerate(embeddings)
    ]
    # SET LOCAL needs a transaction; atomic() reuses the caller's when there is one.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(100, limit * 4)])
        rows = list(nearest[0].union(*nearest[1:], all=True) if len(nearest) > 1 else nearest[0])
    results: list[list[FactNeighbour]] = [[] for _ in embeddings]
    for position, memory_id, content, distance in rows:
        similarity = 1 - distance
        if similarity >= min_similarity:
            results[position].append(
                FactNeighbour(id=memory_id, content=content, similarity=float(similarity))
            )
    return [sorted(found, key=lambda n: (-n.similarity, n.id)) for found in results]


def session_project_id(*, session: ChatSession) -> str:
    """The project a session's memories are filed under: the admin-managed ProjectContext
    mapping when there is one (for the session's owner), else the session's own project_id."""
    mapped = (
        ProjectContext.objects.filter(chat_session=session, user_id=session.user_id)
        .values_list("project_id", flat=True)
        .first()
    )
    return mapped or session.project_id


def commit_log_for_session(*, session: ChatSession) -> MemoryCommitLog | None:
    return MemoryCommitLog.objects.filter(chat_session=session).first()


# --------------------------------------------------------------------------------------------
# Counts: one definition of "a memory", used by the stats API, the memory browser and the
# sessions pages so that they never disagree.
# --------------------------------------------------------------------------------------------


def countable_memories(*, user, app_id: str | None = None) -> QuerySet[MemoryItem]:
    """What every page and the API count as the user's memories: the rows the memory browser
    lists (``memories_for_user``), so retrieval items that repeat part of their turn-pair
    chunk (per-message items, an import's passages) are never counted."""
    return memories_for_user(user=user, app_id=app_id).order_by()


def memory_count_by_source(*, user, app_id: str | None = None) -> dict[str, int]:
    """{source: count} of the user's memories, every source present (0 when none), in
    MemoryItem.Source order; one query."""
    counts = dict.fromkeys(MemoryItem.Source.values, 0)
    counts.update(
        countable_memories(user=user, app_id=app_id)
        .values_list("source")
        .annotate(n=Count("id"))
        .values_list("source", "n")
    )
    return counts


def memory_count_by_session(*, user, session_ids) -> dict[uuid.UUID, int]:
    """{session id: number of the user's memories from that chat} for the given sessions
    (sessions without memories are absent); one query."""
    return dict(
        countable_memories(user=user)
        .filter(chat_session_id__in=list(session_ids))
        .values_list("chat_session_id")
        .annotate(n=Count("id"))
        .values_list("chat_session_id", "n")
    )


def memory_stats(*, user, app_id: str | None = None, top_topics: int = 50) -> dict:
    """Totals of the caller's memories by source, project, topic (the `top_topics` most used
    topics) and knowledge bucket; one app's when app_id is given. (The entity count is the
    entity layer's: ``entities_app.selectors.entity_total``.)

    Counts what the memory browser and the sessions pages count (``countable_memories``), so
    the three never disagree.
    """
    items = countable_memories(user=user, app_id=app_id)
    by_source = memory_count_by_source(user=user, app_id=app_id)
    by_project = dict(
        items.values_list("project_id").annotate(n=Count("id")).values_list("project_id", "n")
    )
    by_topic = dict(_topic_counts(items, limit=top_topics))
    return {
        "total": sum(by_source.values()),
        "by_source": by_source,
        "by_project": by_project,
        "by_topic": by_topic,
        "bucket_distribution": dict(
            items.order_by()
            .values_list("bucket")
            .annotate(n=Count("id"))
            .values_list("bucket", "n")
        ),
    }


def memory_topics_most_used(*, user, limit: int = 100) -> list[str]:
    """The user's topic tags, most used first (the memory browser's topic filter)."""
    return [topic for topic, _ in _topic_counts(MemoryItem.objects.filter(user=user), limit=limit)]


def _topic_counts(items: QuerySet[MemoryItem], *, limit: int) -> list[tuple[str, int]]:
    """(topic, how many of `items` carry it), most used first, then by name."""
    return list(
        items.order_by()
        .annotate(topic=Func(F("topics"), function="unnest"))
        .values("topic")
        .annotate(uses=Count("*"))
        .order_by("-uses", "topic")
        .values_list("topic", "uses")[:limit]
    )


def memories_matching_before(
    *, user_id: int, app_id: str, item: MemoryItem, terms: list[str], limit: int
) -> list[tuple[int, str, str, list[int], bool]]:
    """The user's newest memories (summaries left out) said before ``item`` (at the same
    moment: written before it) whose search vector holds any of ``terms``, as (id, content,
    source, source_message_ids, whether it is a message item), newest first. Sees uncommitted
    rows of the caller's transaction (the entity layer reads them while linking a write)."""
    said_before = Q(occurred_at__lt=item.occurred_at) | Q(
        occurred_at=item.occurred_at, id__lt=item.id
    )
    rows = (
        MemoryItem.objects.filter(said_before, user_id=user_id, app_id=app_id)
        .exclude(source=MemoryItem.Source.SUMMARY)
        .filter(search_vector=SearchQuery(" | ".join(terms), config="english", search_type="raw"))
        .annotate(
            is_message=Case(
                When(metadata__granularity="message", then=Value(True)),
                default=Value(False),
                output_field=BooleanField(),
            )
        )
        .order_by("-occurred_at", "-id")
        .values_list("id", "content", "source", "source_message_ids", "is_message")[:limit]
    )
    return list(rows)
