"""The search scope of the rag_store: the WHERE clause every search statement starts from,
and the statistics of a scope and of the whole table that the keyword and vector sides need
(this process's copy of the table's is dropped when the store analyzes it: `store_analyzed`).

Every statement filters on (user, app_id, sources, filters) before anything is ranked, so
another user's or app's rows can never reach a ranking.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.core.cache import cache

from ingestion_app.models import MemoryItem
from ingestion_app.signals import store_analyzed
from retrieval.config import ranking_config

# Every source a search may ask for, in the order the API lists them.
SOURCES: tuple[str, ...] = tuple(MemoryItem.Source.values)
STATS_TTL_SECONDS = 60
GLOBAL_STATS_TTL_SECONDS = 600
ROLE_SPEAKERS = frozenset({"user", "assistant", "system"})


@dataclass
class SearchFilters:
    project_id: str | None = None
    agent_id: str | None = None
    chat_session_id: str | None = None
    topics: list[str] = field(default_factory=list)
    since: datetime | None = None
    until: datetime | None = None
    # Leave out one session's items (the context pack searches other sessions than its own).
    exclude_chat_session_id: str | None = None
    # Knowledge buckets (settings.MNEMO_BUCKETS) to keep; empty keeps all.
    buckets: list[str] = field(default_factory=list)


@dataclass
class ScopeStats:
    count: int
    # None for a big scope: BM25 takes it from each query's sample (candidates.bm25_big_scope).
    mean_length: float | None
    speakers: list[str]
    # A year at least half of a small scope's items were said in ("2023": both quartiles of
    # their dates in it): the date in each item's header puts it in those items' words. ""
    # when the quartiles fall in two years, and for a big scope.
    common_year: str = ""


# --------------------------------------------------------------------------------------------
# Scope
# --------------------------------------------------------------------------------------------


USER_CONDITION = "user_id = %(s_user)s"


# Each filter of SearchFilters that narrows the scope: its field, the SQL condition, the
# parameter it binds and how the value is sent.
_FILTER_CONDITIONS = (
    ("project_id", "project_id = %(s_project)s", "s_project", str),
    ("agent_id", "agent_id = %(s_agent)s", "s_agent", str),
    ("chat_session_id", "chat_session_id = %(s_session)s", "s_session", str),
    (
        "exclude_chat_session_id",
        "chat_session_id IS DISTINCT FROM %(s_not_session)s::uuid",
        "s_not_session",
        str,
    ),
    ("topics", "topics && %(s_topics)s::varchar[]", "s_topics", list),
    ("buckets", "bucket = ANY(%(s_buckets)s)", "s_buckets", list),
    ("since", "occurred_at >= %(s_since)s", "s_since", None),
    ("until", "occurred_at <= %(s_until)s", "s_until", None),
)


def scope_sql(*, user_id: int, app_id: str, sources, filters: SearchFilters) -> tuple[str, dict]:
    """The WHERE clause every statement starts from: the caller's rows, then the filters (an
    empty filter narrows nothing)."""
    clauses = [USER_CONDITION, "app_id = %(s_app)s", "source = ANY(%(s_sources)s)"]
    params: dict = {"s_user": user_id, "s_app": app_id, "s_sources": list(sources)}
    for name, condition, parameter, sent_as in _FILTER_CONDITIONS:
        value = getattr(filters, name)
        if value:
            clauses.append(condition)
            params[parameter] = sent_as(value) if sent_as else value
    return " AND ".join(clauses), params


def scope_stats(cursor, *, scope: str, params: dict) -> ScopeStats:
    """Item count, mean search-vector length and named speakers of the scope (cached briefly).

    The BM25 length normalisation and idf need them; a minute-old value changes scores by
    far less than the ranking's own noise. Scopes up to `single_statement_items` are read whole;
    a bigger one is counted through rag_user_app_source alone (index-only) and its speakers
    listed from the speaker index (rag_message_speaker); its mean length comes with each
    query's sample (retrieval.candidates.bm25_big_scope): reading every row of a big user would
    cost more than the search itself.
    """
    config = ranking_config()
    # The settings that shape the statistics are part of the key (a benchmark's variants).
    shaped_by = (sorted(params.items()), config.single_statement_items, config.speaker_list_max)
    key = "mnemo:scope-stats:" + hashlib.sha256(repr(shaped_by).encode()).hexdigest()
    cached = cache.get(key)
    if cached is not None:
        return cached
    # One statement: the count (index-only), then either the whole scope read for its mean
    # length, speakers and the year most of it was said in (small scope) or the speaker index
    # (big scope; message items are chunks, so none without chunks in the scope). PostgreSQL
    # runs only the branch taken: the scope read is gated by a one-time filter, the speaker
    # subquery by CASE.
    speakers_sql = (
        f"ARRAY({_USER_SPEAKERS_SQL})"
        if MemoryItem.Source.CHUNK in params["s_sources"]
        else "NULL::text[]"
    )
    cursor.execute(
        f"""SELECT counted.n, whole.mean_length,
                   CASE WHEN counted.n > %(st_small)s THEN {speakers_sql}
                        ELSE whole.speakers END,
                   whole.quartiles
            FROM (SELECT count(*) AS n FROM rag_store WHERE {scope}) AS counted
            LEFT JOIN LATERAL (
                SELECT coalesce(avg(length(search_vector)), 0) AS mean_length,
                       array_agg(DISTINCT metadata->>'speaker')
                           FILTER (WHERE metadata->>'granularity' = 'message') AS speakers,
                       percentile_disc(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY occurred_at)
                           AS quartiles
                FROM rag_store WHERE {scope} AND counted.n <= %(st_small)s
            ) AS whole ON true""",
        {**params, "st_small": config.single_statement_items, "st_max": config.speaker_list_max},
    )
    count, mean_length, speakers, quartiles = cursor.fetchone()
    # Half of the scope lies between its quartiles: both in one year, that year holds half.
    common_year = ""
    if quartiles and quartiles[0] is not None and quartiles[0].year == quartiles[1].year:
        common_year = str(quartiles[0].year)
    if count > config.single_statement_items:
        mean_length = None  # taken from each query's sample (candidates.bm25_big_scope)
    stats = ScopeStats(
        count=count,
        mean_length=(float(mean_length) or 1.0) if mean_length is not None else None,
        speakers=[
            s for s in (speakers or []) if s and len(s) >= 2 and s.lower() not in ROLE_SPEAKERS
        ],
        common_year=common_year,
    )
    cache.set(key, stats, STATS_TTL_SECONDS)
    return stats


# Distinct speakers of the user's message items in the app, one index probe each: a loose scan
# of rag_message_speaker (the predicate is written as the index's). The scope's other filters
# are not applied: a name left out of a filtered keyword query costs little.
_USER_SPEAKERS_SQL = """
    WITH RECURSIVE speakers(name, n) AS (
        (SELECT metadata->>'speaker', 1 FROM rag_store
         WHERE user_id = %(s_user)s AND app_id = %(s_app)s
           AND (metadata -> 'granularity') = '"message"'::jsonb
           AND metadata->>'speaker' IS NOT NULL
         ORDER BY metadata->>'speaker' LIMIT 1)
        UNION ALL
        SELECT (SELECT metadata->>'speaker' FROM rag_store
                WHERE user_id = %(s_user)s AND app_id = %(s_app)s
                  AND (metadata -> 'granularity') = '"message"'::jsonb
                  AND metadata->>'speaker' > speakers.name
                ORDER BY metadata->>'speaker' LIMIT 1), n + 1
        FROM speakers WHERE name IS NOT NULL AND n < %(st_max)s
    )
    SELECT name FROM speakers WHERE name IS NOT NULL"""


@dataclass
class TableStats:
    rows: float  # the planner's row count of rag_store (0 before the first ANALYZE)
    common_lexemes: dict[str, float]  # lexeme -> estimated rows holding it, frequent ones only


# (expiry on time.monotonic(), stats): see table_stats.
_table_stats_cached: tuple[float, TableStats] = (0.0, TableStats(0.0, {}))


def table_stats(cursor) -> TableStats:
    """Table-wide figures from the planner's statistics: the row count and the lexemes frequent
    over the whole rag_store (ANALYZE keeps the most common elements of a tsvector column).
    Kept in the process for GLOBAL_STATS_TTL_SECONDS (not in the cache: unpickling 1,000
    entries per search cost more than the lookup saves)."""
    global _table_stats_cached
    expires, cached = _table_stats_cached
    if time.monotonic() < expires:
        return cached
    cursor.execute(
        """SELECT c.reltuples, s.most_common_elems::text::text[], s.most_common_elem_freqs
           FROM pg_class AS c LEFT JOIN pg_stats AS s
               ON s.tablename = 'rag_store' AND s.attname = 'search_vector'
              AND s.schemaname = current_schema()
           WHERE c.oid = 'rag_store'::regclass"""
    )
    row = cursor.fetchone()
    rows = max(0.0, float(row[0])) if row else 0.0
    common: dict[str, float] = {}
    if row and row[1] and row[2]:
        # The frequencies array has 2-3 summary numbers after one per element.
        common = {
            lexeme: float(frequency) * rows
            for lexeme, frequency in zip(row[1], row[2][: len(row[1])], strict=True)
        }
    stats = TableStats(rows=rows, common_lexemes=common)
    _table_stats_cached = (time.monotonic() + GLOBAL_STATS_TTL_SECONDS, stats)
    return stats


def table_stats_forget(**_signal) -> None:
    """Drop this process's copy of `table_stats`: the store ran ANALYZE (`store_analyzed`)."""
    global _table_stats_cached
    _table_stats_cached = (0.0, TableStats(0.0, {}))


store_analyzed.connect(table_stats_forget, dispatch_uid="retrieval.scope.table_stats_forget")


def without_user_index(scope: str) -> str:
    """The scope with its user condition written so no btree on user_id can serve it (the
    condition still filters every row the HNSW scan returns)."""
    return scope.replace(USER_CONDITION, "user_id + 0 = %(s_user)s", 1)
