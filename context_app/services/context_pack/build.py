"""Building and recording the context pack of a turn: the segments within the latency budget
(summaries, topic, relevant memories, known entities), the InjectionLog row and the session's
context state. `prepare.prepare_context` is the entry point that calls it.

The budget is met by doing less, never by dropping the pack: the rollups and the topic summary
need no search and are always read; when the query's embedding is not ready in time (a slow
CPU, a remote embedder) the memories come from the keyword leg alone; when the budget is spent
the known-entities lookup is left out. Each part left out is named in `ContextPack.skipped`,
the debug view and the injection log. Only a database error leaves a turn with no pack.
"""

from __future__ import annotations

import logging
import re
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from django.db import connection

from context_app.models import ContextSettings
from context_app.services.context_pack.segments import (
    PROFILE_SEGMENT,
    Segment,
    SegmentSource,
    as_quoted_data,
    fit_segments,
)
from context_app.services.topics import (
    TopicChoice,
    topic_infer,
    topic_summary_get_or_build,
)
from context_app.summary_selectors import user_rollups
from entities_app.selectors import entities_for_context
from ingestion_app.models import MemoryItem
from ingestion_app.selectors.memories import memory_ids_present
from ingestion_app.services.deferred_embeddings import (
    pending_embedding_sessions,
    pending_embeddings_wait,
)
from memory_site.providers import get_embedder
from mnemo_text.redaction import redact
from mnemo_text.third_person import third_person_text
from profile_app.selectors import ProfilePack, profile_for_pack
from retrieval.search import SOURCES, SearchFilters, format_for_prompt, memory_search
from sessions_app.models import ChatSession
from sessions_app.selectors import sessions_ended_among

# One logger for the whole context pack (its log records keep the package's name).
logger = logging.getLogger(__package__)

# The memories query asks for more hits than it keeps: hits from the current session (already
# in the conversation) are dropped, and recency reorders the candidates.
EXTRA_HITS = 4
CANDIDATES_PER_SLOT = 3
# What the [Relevant memories] segment draws on: every source but uploaded documents.
MEMORY_SOURCES = tuple(s for s in SOURCES if s != MemoryItem.Source.DOCUMENT)
METADATA_KEY = "context"
# The context state's list of the memory lines injected so far in this conversation.
CARRIED_KEY = "memory_lines"
# "Known entities": at most this many lines, within a third of the memories segment's cap.
KNOWN_ENTITIES_MAX = 8
# Of the latency budget, at least this much is kept for the memory search and the assembly.
EMBEDDING_RESERVE_MS = 40.0
# What [Relevant memories] says when nothing the user ever said is relevant to this turn
# (better than filler: the model knows memory was consulted).
NO_RELEVANT_MEMORIES = "(no relevant memories for this message)"

# Query embeddings run beside the database reads, so a remote embedder's latency overlaps them.
_embedding_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="context-embed")


# --------------------------------------------------------------------------------------------
# The build
# --------------------------------------------------------------------------------------------


class Deadline:
    def __init__(self, budget_ms: int):
        self.started = time.perf_counter()
        self.budget_ms = budget_ms

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def remaining_ms(self) -> float:
        return self.budget_ms - self.elapsed_ms()

    def spent(self) -> bool:
        return self.remaining_ms() <= 0


# What ContextPack.skipped names (the debug view and the injection log show them).
SKIPPED_VECTOR_NOT_READY = "vector search: the query embedding was not ready within the budget"
SKIPPED_VECTOR_FAILED = "vector search: the query could not be embedded"
SKIPPED_ENTITIES = "known entities: the latency budget was spent"


def transaction_configure(*, statement_timeout_ms: int | None) -> str:
    """Settings for the current transaction only; returns the previous statement_timeout.

    synchronous_commit off: what a build writes (injection log, session context state, a
    rebuilt topic summary) is derived or audit data, not worth a disk flush on the turn's
    critical path; a crash can lose the last few hundred milliseconds of it, never corrupt it.
    statement_timeout (when given) bounds every statement, so a stuck query cannot hold the turn.
    """
    timeout = f"{max(statement_timeout_ms, 1)}ms" if statement_timeout_ms else None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('statement_timeout'),"
            " set_config('statement_timeout', coalesce(%s, current_setting('statement_timeout')), true),"
            " set_config('synchronous_commit', 'off', true)",
            [timeout],
        )
        return cursor.fetchone()[0]


def statement_timeout_restore(value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('statement_timeout', %s, true)", [value])


def _embed_query(query: str) -> list[float]:
    return get_embedder().embed([query])[0]


def pack_query(query: str) -> str:
    """The text a pack matches memories against: redacted, at most 4,000 characters."""
    return redact(query or "")[:4000]


@dataclass
class QueryEmbedding:
    """A query embedding started ahead of `prepare_context` (see `query_embedding_start`)."""

    text: str
    future: Future

    def cancel(self) -> None:
        self.future.cancel()


def query_embedding_start(query: str) -> QueryEmbedding | None:
    """Start embedding the pack's query for `query` now, in the background.

    A caller that knows the turn's query before it has stored the turn (the gateway) starts
    the embedding first, so the embedder works while the database does; `prepare_context`
    uses it when its query is the same text. None for a query with no text.
    """
    text = pack_query(query)
    if not text.strip():
        return None
    return QueryEmbedding(text=text, future=_embedding_pool.submit(_embed_query, text))


def pack_profile(*, session: ChatSession, context_settings: ContextSettings) -> ProfilePack:
    """The profile segment of a pack in `session`'s scope (one query)."""
    return profile_for_pack(
        user_id=session.user_id,
        app_id=session.app_id,
        cap_chars=context_settings.profile_cap_chars,
    )


def _known_entity_lines(*, session: ChatSession, query: str, memory_ids: list[int]) -> str:
    """One line per entity the turn names, then per entity the chosen memories name."""
    return "\n".join(
        f"- {entity.prompt_line()}"
        for entity in entities_for_context(
            user_id=session.user_id,
            app_id=session.app_id,
            query=query,
            item_ids=memory_ids,
            limit=KNOWN_ENTITIES_MAX,
        )
    )


def _ended_chats_vectors_wait(session: ChatSession, timeout: float) -> None:
    """Read your own writes at a chat's end: memories are found here by vector alone, and the
    items this process stored for the user just before get theirs a few milliseconds after
    that response (ingestion_app.services.deferred_embeddings). The pack waits for those of
    the user's chats that have ended (closed or closing), so the first pack after "End chat"
    sees all of it. Not for chats still open (a chat app's next conversation may start a
    moment after the last reply; waiting for that reply's vectors on a 2-core machine cost
    ~17 ms of its first token), nor for this session's own items, which the search
    below leaves out (the conversation holds them)."""
    pending = pending_embedding_sessions(user_id=session.user_id, except_session_id=session.id)
    ended = sessions_ended_among(user_id=session.user_id, session_ids=pending)
    if ended:
        pending_embeddings_wait(timeout, user_id=session.user_id, session_ids=ended)


def _wait_left_s(deadline: Deadline) -> float:
    """Seconds the build may still wait (for the embedding, for earlier chats' vectors) while
    leaving room for the search and the assembly."""
    reserve_ms = max(EMBEDDING_RESERVE_MS, deadline.budget_ms * 0.25)
    return max(deadline.remaining_ms() - reserve_ms, 0) / 1000


def _ready_query_embedding(
    *, session: ChatSession, query_future, deadline: Deadline, skipped: list[str]
) -> list[float] | None:
    """The query's embedding if it is ready while the budget still leaves room for the search
    and the assembly, else None (and why, in `skipped`): a slow embedder costs the vector leg,
    not the memories."""
    try:
        return query_future.result(timeout=_wait_left_s(deadline))
    except FutureTimeout:
        logger.info(
            "context: keyword-only memories for session %s (query embedding not ready within "
            "the %d ms budget)",
            session.id,
            deadline.budget_ms,
        )
        skipped.append(SKIPPED_VECTOR_NOT_READY)
    except Exception as exc:  # noqa: BLE001 - ProviderError or worse: keyword leg only
        logger.warning(
            "context: query embedding failed for session %s, keyword-only memories: %s",
            session.id,
            exc,
        )
        skipped.append(SKIPPED_VECTOR_FAILED)
    return None


def _relevant_memory_lines(
    *,
    session: ChatSession,
    query: str,
    query_future,
    deadline: Deadline,
    context_settings,
    skipped: list[str],
) -> tuple[list[tuple[str, dict]], float]:
    """The memory lines for the pack and the time spent waiting for the embedding.

    Hybrid search when the query's embedding is ready in time, else the keyword leg alone
    (`skipped` says so): the memories are always consulted."""
    embedding_started = time.perf_counter()
    embedding = _ready_query_embedding(
        session=session, query_future=query_future, deadline=deadline, skipped=skipped
    )
    if embedding is not None:
        _ended_chats_vectors_wait(session, _wait_left_s(deadline))
    waited_ms = (time.perf_counter() - embedding_started) * 1000
    top_k = context_settings.memory_top_k
    if top_k <= 0:
        return [], waited_ms
    # The search API's hybrid ranking (keyword, vector and entity legs, trust rules, newer over
    # older), with the recency weight: "Where do I live?" shares the word "live" with "I live in
    # Austin" but only cosine 0.31 with it (all-MiniLM-L6-v2), under the 0.35 a memory found by
    # its meaning alone needs. A memory the keyword leg found needs no similarity; the relevance
    # floor still drops a weak match.
    half_life = context_settings.memory_recency_half_life_days
    result = memory_search(
        user=session.user,
        query=query,
        app_id=session.app_id,
        top_k=top_k * CANDIDATES_PER_SLOT + EXTRA_HITS,
        max_tokens=None,
        min_similarity=None,
        sources=MEMORY_SOURCES,
        mode="hybrid" if embedding is not None else "keyword",
        # This session's own turns are already in the conversation; excluding them in the
        # query keeps a long session's message items from crowding out other memories.
        filters=SearchFilters(exclude_chat_session_id=str(session.id)),
        query_embedding=embedding,
        recency_half_life_days=half_life or None,
    )
    own_session = str(session.id)
    threshold = context_settings.memory_min_similarity
    lines: list[tuple[str, dict]] = []
    for hit in result.items:
        if len(lines) >= top_k:
            break
        if hit.chat_session_id == own_session:
            continue
        if hit.keyword_rank is None and (hit.similarity is None or hit.similarity < threshold):
            continue
        meta = {
            "id": hit.id,
            "source": hit.source,
            "score": round(hit.score, 5),
            "similarity": None if hit.similarity is None else round(hit.similarity, 4),
        }
        lines.append((format_for_prompt([hit]), meta))
    superseded = {hit.id for hit in result.items if hit.superseded}
    return _carried_lines(session, lines, superseded=superseded, top_k=top_k) + lines, waited_ms


def _carried_lines(
    session: ChatSession, lines: list[tuple[str, dict]], *, superseded: set[int], top_k: int
) -> list[tuple[str, dict]]:
    """The memory lines earlier turns of this conversation injected, kept for this turn: a
    chat app resends the conversation but not the pack, so a follow-up ("and a gift under 100
    euros?") that shares no word with the turn that brought a memory (the allergy) would
    otherwise lose it. Not kept: what this turn's search found again (it is in `lines`), what
    it shows superseded, and what was deleted meanwhile; at most `top_k`, newest first."""
    state = (session.metadata or {}).get(METADATA_KEY) or {}
    earlier = [entry for entry in state.get(CARRIED_KEY) or [] if isinstance(entry, dict)]
    found = {meta["id"] for _, meta in lines}
    wanted = [
        entry
        for entry in earlier
        if entry.get("id") not in found and entry.get("id") not in superseded
    ][:top_k]
    present = memory_ids_present(user=session.user, ids=[entry["id"] for entry in wanted])
    return [
        (entry["line"], {**entry.get("meta", {}), "id": entry["id"], "carried": True})
        for entry in wanted
        if entry["id"] in present and isinstance(entry.get("line"), str)
    ]


def carried_state(lines: list[tuple[str, dict]] | None) -> list[dict]:
    """What the session's context state keeps of a pack's memory lines for the next turns."""
    newest_first = sorted(lines or [], key=lambda line_meta: bool(line_meta[1].get("carried")))
    return [
        {"id": meta["id"], "line": line, "meta": {k: v for k, v in meta.items() if k != "carried"}}
        for line, meta in newest_first
    ]


def memories_match(
    *,
    session: ChatSession,
    query: str,
    deadline: Deadline,
    context_settings,
    query_future: Future | None = None,
) -> tuple[list[tuple[str, dict]], float, list[str]]:
    """This turn's memory lines outside a build (the not-due path): ([], 0, []) without a
    query; the third item names the parts left out (ContextPack.skipped).
    `query_future`: the query's embedding when it was started earlier."""
    if not query.strip() or context_settings.memory_top_k <= 0:
        return [], 0.0, []
    query_future = query_future or _embedding_pool.submit(_embed_query, query)
    skipped: list[str] = []
    try:
        lines, waited_ms = _relevant_memory_lines(
            session=session,
            query=query,
            query_future=query_future,
            deadline=deadline,
            context_settings=context_settings,
            skipped=skipped,
        )
        return lines, waited_ms, skipped
    finally:
        query_future.cancel()


def memory_ids_of(lines: list[tuple[str, dict]] | None) -> list[int] | None:
    return None if lines is None else [meta["id"] for _, meta in lines]


def pack_build(
    *,
    session: ChatSession,
    turn: int,
    query: str,
    previous_topic: TopicChoice | None,
    override: TopicChoice | None,
    max_tokens: int,
    context_settings: ContextSettings,
    deadline: Deadline,
    matched: tuple[list[tuple[str, dict]], float, list[str]] | None = None,
    query_future: Future | None = None,
    skipped: list[str] | None = None,
    profile: ProfilePack | None = None,
) -> tuple[list[Segment], list[dict], str, TopicChoice | None, str, float, list]:
    """Read and assemble, inside the caller's build transaction (see `_prepare`).

    The [Profile] segment comes first and is the last to give way to the total cap: the
    user's standing instructions and preferences shape every answer, whatever the query.
    `matched`: the memory lines, embedding time and skipped parts when the caller already
    matched them this turn; `profile`: the profile when the caller already read it;
    `query_future`: the query's embedding when it was started earlier;
    `skipped` collects the parts left out to stay within the budget. Raises DatabaseError only;
    the only write is an upserted topic summary.
    """
    skipped = [] if skipped is None else skipped
    wants_memories = bool(query.strip()) and context_settings.memory_top_k > 0
    if not wants_memories or matched is not None:
        query_future = None
    elif query_future is None:
        query_future = _embedding_pool.submit(_embed_query, query)
    try:
        if profile is None:
            profile = pack_profile(session=session, context_settings=context_settings)
        rollups = user_rollups(user=session.user, app_id=session.app_id)
        topic, topic_reason = topic_infer(
            session=session,
            current=previous_topic,
            override=override,
            context_settings=context_settings,
        )
        topic_text = ""
        if topic is not None:
            topic_summary = topic_summary_get_or_build(
                user=session.user,
                app_id=session.app_id,
                topic=topic,
                context_settings=context_settings,
            )
            topic_text = topic_summary.summary
        memory_lines: list[tuple[str, dict]] | None = None
        embedding_ms = 0.0
        if matched is not None:
            memory_lines, embedding_ms, matched_skipped = matched
            skipped.extend(matched_skipped)
        elif query_future is not None:
            memory_lines, embedding_ms = _relevant_memory_lines(
                session=session,
                query=query,
                query_future=query_future,
                deadline=deadline,
                context_settings=context_settings,
                skipped=skipped,
            )
        entity_text = ""
        if query.strip() and deadline.spent():
            skipped.append(SKIPPED_ENTITIES)
        elif query.strip():
            entity_text = _known_entity_lines(
                session=session,
                query=query,
                memory_ids=[meta["id"] for _, meta in memory_lines or []],
            )
    finally:
        if query_future is not None:
            query_future.cancel()

    recent = rollups.get("recent")
    history = rollups.get("history")
    sources = [
        SegmentSource(
            PROFILE_SEGMENT,
            context_settings.profile_cap_chars,
            priority=5,
            text=profile.text,
            entry_ids=profile.entry_ids,
        ),
        SegmentSource(
            "Recent context",
            context_settings.recent_cap_chars,
            priority=2,
            text=as_quoted_data(redact(recent.summary)) if recent else "",
        ),
        SegmentSource(
            "Long-term history",
            context_settings.history_cap_chars,
            priority=1,
            text=as_quoted_data(redact(history.summary)) if history else "",
        ),
    ]
    if topic is not None:
        sources.append(
            SegmentSource(
                f"Topic: {topic.title}",
                context_settings.topic_cap_chars,
                priority=3,
                text=as_quoted_data(redact(topic_text)),
            )
        )
    if memory_lines:
        # What the rollups or the topic already say is not repeated below them.
        shown = " ".join(" ".join(source.text.split()) for source in sources)
        memory_lines = [
            (line, meta) for line, meta in memory_lines if not _said_already(line, shown)
        ] or memory_lines
    if memory_lines:
        sources.append(
            SegmentSource(
                "Relevant memories",
                context_settings.memories_cap_chars,
                priority=4,
                lines=[(redact(line), meta) for line, meta in memory_lines],
            )
        )
    elif memory_lines is not None and any(source.text.strip() for source in sources):
        sources.append(
            SegmentSource(
                "Relevant memories",
                context_settings.memories_cap_chars,
                priority=4,
                text=NO_RELEVANT_MEMORIES,
            )
        )
    sources.append(
        SegmentSource(
            "Known entities",
            context_settings.memories_cap_chars // 3,
            priority=0,
            text=as_quoted_data(redact(entity_text)),
        )
    )
    segments, memories, text = fit_segments(
        sources, total_cap=context_settings.total_cap_chars, max_tokens=max_tokens
    )
    return segments, memories, text, topic, topic_reason, embedding_ms, memory_lines


# Share of a memory's points found in the other segments above which it is not shown again.
REPEATED_SHARE = 0.6


def _said_already(line: str, shown: str) -> bool:
    """Whether most of a memory line's points are in `shown` (the other segments' text,
    whitespace collapsed): a summary's bullets ("- The user lives in Austin."), a fact, or the
    user's own message retold as the rollups retell it ("User: I moved to Denver" is "The
    user moved to Denver")."""
    start, end = line.find('"'), line.rfind('"')
    body = line[start + 1 : end] if 0 <= start < end else line
    if body.startswith("User: "):
        body = third_person_text(body[len("User: ") :])
    points = [point.strip(' ."…') for point in re.split(r"(?:^|\s)-\s", body)]
    points = [point for point in points if len(point) >= 12]
    if not points:
        return False
    found = sum(1 for point in points if point in shown)
    return found / len(points) >= REPEATED_SHARE
