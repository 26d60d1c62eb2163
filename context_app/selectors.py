"""Retrieval: the one hybrid search over the rag_store, scoped to the caller before ranking.

Used by the context pack's [Relevant memories], the memory browser and the search API. Every
statement filters on (user, app_id, sources, filters) before anything is ranked, so another
user's or app's rows can never reach a ranking.

Design (measured on LoCoMo, /work/briefs/retrieval_findings.md; `bench/locomo.py` reproduces it):

- Keyword side: Okapi BM25 computed in SQL over the `search_vector` lexemes (english config).
  `ts_rank_cd` has no inverse document frequency and ranks 10-20 points worse. Words of the item
  itself (weight A) count fully, its keyword context (weight B: a message's neighbours) at half
  term frequency. Scope statistics (count, mean length, speakers) are cached for a minute.
  Scopes up to SINGLE_STATEMENT_ITEMS (2,000) items are scored exactly in one statement over
  their own rows (never through the GIN index: one common word's posting list costs more
  than the whole scope). Bigger scopes estimate document frequencies from a 300-row sample
  and draw candidates from the rarest terms only, found through GIN (MaxScore-like pruning;
  the common terms still add to their score): for 10,000-item users the keyword side's p95
  went from 44-58 ms to 6-7 ms (bench/scale.py, 300k and 1M rows), and its top 10 agrees
  with exact BM25 on 99.8-100% of items.
- Vector side: pgvector HNSW cosine with iterative index scans, so user-scoped filters keep
  their recall; scopes too big for an exact sort are kept on the index (_vector_candidates).
- Fusion: weighted reciprocal rank fusion (k=20, keyword 1.0, vector 0.7: the local embedder
  is weaker than BM25 on conversation recall; 0.6-0.8 is a plateau, equal weights lose a
  point, 0.3 loses one too); a message item
  also gets 0.3 x the best fused score of its neighbouring messages (answers sit next to the
  matched question); when the query names exactly one of the conversation's speakers, that
  name is dropped from the keyword query and their messages are boosted x1.5.
- Optional recency weight, a similarity threshold, scope filters. Packing walks the ranking,
  skips an item whose messages are all covered by items already taken (turn-pair chunks and
  message items overlap) and stops before max_tokens.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from ingestion_app.models import MemoryItem
from memory_site.errors import InvalidInput
from memory_site.providers import get_embedder

SOURCES = ("fact", "chunk", "summary", "document")
MODES = ("hybrid", "semantic", "keyword")

# Fusion (see the module docstring for why these values).
RRF_K = 20
KEYWORD_WEIGHT = 1.0
VECTOR_WEIGHT = 0.7
NEIGHBOUR_WEIGHT = 0.3
SPEAKER_BOOST = 1.5
# Score factor of a turn-pair chunk whose messages also exist as message items: the pair
# repeats them at twice the length. Measured on LoCoMo: 1, 0.5, 0.25 and 0 all within 0.1
# point (packing already skips items whose messages are covered); 0.5 prefers the short items
# while a pair's contextual header can still lift it when its messages rank low.
PAIR_WEIGHT = 0.5
# Score factor of session summaries: long (up to 800 chars) and covering no single message,
# one ranked high takes 40% of a 2,000-character budget (measured: +0.5 on LoCoMo; 0.5 and 0
# give the same recall, 0.5 keeps summaries reachable when nothing else matches).
SUMMARY_WEIGHT = 0.5
CANDIDATES_PER_SIDE = 100

# BM25.
BM25_K1 = 1.2
BM25_B = 0.75
CONTEXT_TF_WEIGHT = 0.5  # term frequency of a keyword-context (weight B) occurrence
MAX_QUERY_TERMS = 32  # lexemes of a long query beyond the first 32 are ignored
MAX_KEYWORD_QUERY_CHARS = 4000  # a pasted document as query: only its start is parsed
# Scopes up to this many items are scored exactly in one statement (see _bm25_candidates);
# bigger ones estimate the frequency of common terms from a sample and draw candidates from
# the rarest terms only.
SINGLE_STATEMENT_ITEMS = 2000
DF_SAMPLE_ITEMS = 300  # rows of a big scope whose term counts estimate document frequency
PRUNE_DF = 1000  # candidates come from the rarest terms whose summed df stays under this
BIG_SCOPE_CANDIDATES = 3000  # and at most this many rows are scored
# A term matching more rows than this over the whole table is never looked up through the GIN
# index for one scope: reading its posting list costs more than scanning the scope.
GIN_GLOBAL_ROWS = 20_000
SPEAKER_LIST_MAX = 200
# Cost of one GIN posting-list entry of a term, in scope rows read: a word with 15,000 rows
# table-wide took 11 ms to look up (300k rows, 10k-item user) where its ~500 rows in the
# scope take ~2 ms. A word too costly for PRUNE_DF draws no candidates but still scores. At
# 1M rows 0.05 cut the keyword top 10's agreement with exact BM25 to 0.94-0.97 (rows matching
# only such a word were lost); 0.02 keeps 0.998 at the same CPU time.
GIN_ROW_COST = 0.02
# Scopes from this many items may be forced onto the HNSW index (see _vector_candidates);
# smaller ones are left to the planner (an exact sort of a few thousand rows is cheap and exact).
VECTOR_INDEX_MIN_ITEMS = 5000
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


@dataclass
class SearchResult:
    items: list[SearchHit]
    total_tokens_used: int
    query_embedding_ms: float
    search_ms: float


@dataclass
class _Candidate:
    id: int
    source: str
    chat_session_id: str | None
    occurred_epoch: float  # seconds; parsing ~200 datetimes per search costs a millisecond
    token_count: int
    source_message_ids: list[int]
    is_message: bool
    speaker: str
    position: int | None
    is_covered_pair: bool
    similarity: float | None
    keyword_score: float | None = None
    score: float = 0.0


@dataclass
class _ScopeStats:
    count: int
    # None for a big scope: BM25 takes it from the per-query sample (_bm25_big_scope).
    mean_length: float | None
    speakers: list[str]


# --------------------------------------------------------------------------------------------
# Scope
# --------------------------------------------------------------------------------------------


_USER_CONDITION = "user_id = %(s_user)s"


def _scope_sql(*, user_id: int, app_id: str, sources, filters: SearchFilters) -> tuple[str, dict]:
    """The WHERE clause every statement starts from: the caller's rows, then the filters."""
    clauses = [_USER_CONDITION, "app_id = %(s_app)s", "source = ANY(%(s_sources)s)"]
    params: dict = {"s_user": user_id, "s_app": app_id, "s_sources": list(sources)}
    if filters.project_id:
        clauses.append("project_id = %(s_project)s")
        params["s_project"] = filters.project_id
    if filters.agent_id:
        clauses.append("agent_id = %(s_agent)s")
        params["s_agent"] = filters.agent_id
    if filters.chat_session_id:
        clauses.append("chat_session_id = %(s_session)s")
        params["s_session"] = str(filters.chat_session_id)
    if filters.exclude_chat_session_id:
        clauses.append("chat_session_id IS DISTINCT FROM %(s_not_session)s::uuid")
        params["s_not_session"] = str(filters.exclude_chat_session_id)
    if filters.topics:
        clauses.append("topics && %(s_topics)s::varchar[]")
        params["s_topics"] = list(filters.topics)
    if filters.since:
        clauses.append("occurred_at >= %(s_since)s")
        params["s_since"] = filters.since
    if filters.until:
        clauses.append("occurred_at <= %(s_until)s")
        params["s_until"] = filters.until
    return " AND ".join(clauses), params


def _scope_stats(cursor, *, scope: str, params: dict) -> _ScopeStats:
    """Item count, mean search-vector length and named speakers of the scope (cached briefly).

    The BM25 length normalisation and idf need them; a minute-old value changes scores by
    far less than the ranking's own noise. Scopes up to SINGLE_STATEMENT_ITEMS are read whole;
    a bigger one is counted through rag_user_app_source alone (index-only) and its speakers
    listed from the speaker index (rag_message_speaker); its mean length comes with each
    query's sample (_bm25_big_scope). Reading every row of a 10,000-item user cost 16-30 ms.
    """
    key = "mnemo:scope-stats:" + hashlib.sha256(repr(sorted(params.items())).encode()).hexdigest()
    cached = cache.get(key)
    if cached is not None:
        return cached
    # One statement: the count (index-only), then either the whole scope read for its mean
    # length and speakers (small scope) or the speaker index (big scope; message items are
    # chunks, so none without chunks in the scope). PostgreSQL runs only the branch taken:
    # the scope read is gated by a one-time filter, the speaker subquery by CASE.
    speakers_sql = (
        f"ARRAY({_USER_SPEAKERS_SQL})"
        if MemoryItem.Source.CHUNK in params["s_sources"]
        else "NULL::text[]"
    )
    cursor.execute(
        f"""SELECT counted.n, whole.mean_length,
                   CASE WHEN counted.n > %(st_small)s THEN {speakers_sql}
                        ELSE whole.speakers END
            FROM (SELECT count(*) AS n FROM rag_store WHERE {scope}) AS counted
            LEFT JOIN LATERAL (
                SELECT coalesce(avg(length(search_vector)), 0) AS mean_length,
                       array_agg(DISTINCT metadata->>'speaker')
                           FILTER (WHERE metadata->>'granularity' = 'message') AS speakers
                FROM rag_store WHERE {scope} AND counted.n <= %(st_small)s
            ) AS whole ON true""",
        {**params, "st_small": SINGLE_STATEMENT_ITEMS, "st_max": SPEAKER_LIST_MAX},
    )
    count, mean_length, speakers = cursor.fetchone()
    if count > SINGLE_STATEMENT_ITEMS:
        mean_length = None  # taken from each query's sample (_bm25_big_scope)
    stats = _ScopeStats(
        count=count,
        mean_length=(float(mean_length) or 1.0) if mean_length is not None else None,
        speakers=[
            s for s in (speakers or []) if s and len(s) >= 2 and s.lower() not in ROLE_SPEAKERS
        ],
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


def _named_speakers(query: str, speakers: list[str]) -> list[str]:
    lowered = query.lower()
    return [
        name for name in speakers if re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", lowered)
    ]


# --------------------------------------------------------------------------------------------
# Keyword side: BM25 in SQL
# --------------------------------------------------------------------------------------------


def _tsquery_term(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand (already normalised: no second stemming)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


# The query's lexemes (english config, first MAX_QUERY_TERMS in text order), each with its
# quoted tsquery operand; a named speaker's lexemes are left out unless nothing else remains.
_TERMS_SQL = r"""
    query_terms AS (
        SELECT t.lexeme, t.positions[1] AS first_position,
               '''' || replace(replace(t.lexeme, '\', '\\'), '''', '''''') || '''' AS operand,
               t.lexeme IN (SELECT n.lexeme FROM unnest(to_tsvector('english', %(k_drop)s)) AS n)
                   AS is_name
        FROM unnest(to_tsvector('english', %(k_query)s)) AS t
        ORDER BY t.positions[1] LIMIT %(k_max_terms)s
    ),
    terms AS (
        SELECT lexeme, first_position, operand::tsquery AS any_weight,
               (operand || ':A')::tsquery AS in_item, (operand || ':B')::tsquery AS in_context
        FROM query_terms
        WHERE NOT is_name OR NOT EXISTS (SELECT 1 FROM query_terms WHERE NOT is_name)
    )"""

# tf of a term in an item: 1 if it is in the item's own text (weight A) plus k_context_tf if it
# is in its keyword context (weight B). Materialized so each pair of tests runs once, float8
# so no numeric arithmetic creeps in. Occurrence counts are not used: items are mostly one
# message, and on LoCoMo counting positions changed recall by 0.2 points at several times the
# cost (it needs unnest() of every candidate's vector).
_MATCHES_SQL = """
    matches AS MATERIALIZED (
        SELECT c.id, c.dl, terms.lexeme,
               (c.search_vector @@ terms.in_item)::int::float8
               + %(k_context_tf)s::float8 * (c.search_vector @@ terms.in_context)::int::float8
                   AS tf
        FROM candidates AS c CROSS JOIN terms
    )"""

_BM25_TERM_SQL = """idf * tf * (%(k_k1)s::float8 + 1) / (tf + %(k_k1)s::float8
                 * (1 - %(k_b)s::float8 + %(k_b)s::float8 * dl / %(k_avgdl)s::float8))"""


def _bm25_params(*, query: str, drop_name: str, stats: _ScopeStats, limit: int) -> dict:
    return {
        "k_query": query,
        "k_drop": drop_name,
        "k_max_terms": MAX_QUERY_TERMS,
        "k_context_tf": float(CONTEXT_TF_WEIGHT),
        "k_k1": float(BM25_K1),
        "k_b": float(BM25_B),
        "k_avgdl": float(stats.mean_length or 1.0),
        "k_count": stats.count,
        "k_limit": limit,
    }


def _bm25_candidates(
    cursor, *, scope: str, params: dict, query: str, drop_name: str, stats: _ScopeStats, limit: int
) -> list[tuple[int, float]]:
    """(id, BM25 score) of the best keyword matches, best first.

    drop_name: a speaker name the query names; its lexemes leave the query (every message of
    the conversation is "about" its participants) unless nothing else would be left.
    Scopes up to SINGLE_STATEMENT_ITEMS items are scored exactly in one statement: the scope's
    rows are read through its own index and filtered (document frequencies counted on the
    matching rows themselves). The GIN index is kept out of it on purpose: one common query
    word has a posting list of half the table, and reading it cost 40 ms where the scope's
    100 rows cost 0.1 ms. Bigger scopes go through _bm25_big_scope.
    """
    bm25 = {**params, **_bm25_params(query=query, drop_name=drop_name, stats=stats, limit=limit)}
    if stats.count > SINGLE_STATEMENT_ITEMS:
        return _bm25_big_scope(cursor, scope=scope, bm25=bm25, stats=stats)
    cursor.execute(
        f"""WITH {_TERMS_SQL},
            candidates AS MATERIALIZED (
                SELECT id, search_vector, length(search_vector)::float8 AS dl
                FROM (SELECT id, search_vector FROM rag_store WHERE {scope} OFFSET 0) AS scoped
                WHERE search_vector @@ (
                    SELECT string_agg(operand, ' | ')::tsquery FROM query_terms
                    WHERE lexeme IN (SELECT lexeme FROM terms))
            ),
            {_MATCHES_SQL},
            term_idf AS (
                SELECT lexeme, ln(1 + (greatest(%(k_count)s, count(*)) - count(*) + 0.5)
                                      / (count(*) + 0.5)) AS idf
                FROM matches WHERE tf > 0 GROUP BY lexeme
            )
            SELECT id, sum({_BM25_TERM_SQL}) AS score
            FROM matches JOIN term_idf USING (lexeme) WHERE tf > 0
            GROUP BY id ORDER BY score DESC, id DESC LIMIT %(k_limit)s""",
        bm25,
    )
    return [(row[0], float(row[1])) for row in cursor.fetchall()]


def _bm25_big_scope(cursor, *, scope: str, bm25: dict, stats: _ScopeStats):
    """BM25 over a big scope in two statements, reading a few hundred rows instead of all.

    1. The query's terms and how many of the scope's first DF_SAMPLE_ITEMS rows (storage
       order, i.e. roughly the oldest) hold each: document frequency estimated from that
       sample. Counting every match cost ~45 ms for a common word in a 10,000-item scope; idf
       is a logarithm, so a sampled df moves it by a few percent.
    2. Candidates are the scope's rows matching the rarest terms (summed estimated df up to
       PRUNE_DF, at least the rarest), found through the GIN index; their df is counted
       exactly on those rows, every other term adds to their score with its sampled df. A
       row matching only common terms scores below a row holding a rare one, so the top of
       the ranking is the exact one's (MaxScore-like pruning). A term common over the whole
       table is never looked up through GIN (GIN_GLOBAL_ROWS); when no term qualifies, the
       scope's rows are scanned, at most BIG_SCOPE_CANDIDATES matches.
    """
    cursor.execute(
        f"""WITH {_TERMS_SQL},
            sample AS MATERIALIZED (
                SELECT search_vector FROM rag_store WHERE {scope} LIMIT %(k_sample)s
            )
            SELECT terms.lexeme,
                   (SELECT count(*) FROM sample WHERE search_vector @@ terms.any_weight),
                   (SELECT count(*) FROM sample),
                   (SELECT avg(length(search_vector)) FROM sample)
            FROM terms ORDER BY terms.first_position""",
        {**bm25, "k_sample": DF_SAMPLE_ITEMS},
    )
    rows = cursor.fetchall()
    if not rows:
        return []
    sample_size = max(1, rows[0][2])
    count = max(stats.count, sample_size)
    mean_length = stats.mean_length or float(rows[0][3] or 0) or 1.0
    # Sampled df, never below 0.5 (a term absent from the sample may still occur).
    estimated = {lexeme: max(0.5, hits * count / sample_size) for lexeme, hits, _, _ in rows}
    common = _table_stats(cursor).common_lexemes
    candidate_terms, total = [], 0.0
    for lexeme in sorted(estimated, key=lambda lexeme: estimated[lexeme]):
        # Cost of a term: its rows in the scope, plus its posting list read from GIN.
        cost = estimated[lexeme] + common.get(lexeme, 0) * GIN_ROW_COST
        if candidate_terms and total + cost > PRUNE_DF:
            break
        if common.get(lexeme, 0) > GIN_GLOBAL_ROWS:
            continue
        candidate_terms.append(lexeme)
        total += cost
    if candidate_terms:
        candidates_sql = f"SELECT id, search_vector FROM rag_store WHERE {scope}"
        candidate_query = " | ".join(_tsquery_term(lexeme) for lexeme in candidate_terms)
    else:
        candidates_sql = f"SELECT id, search_vector FROM rag_store WHERE {scope} OFFSET 0"
        candidate_query = " | ".join(_tsquery_term(lexeme) for lexeme in estimated)
    # One row per candidate with one tf column per term, df of each term counted over the
    # candidates in the same statement, each term's weight (idf x (k1 + 1)) and each row's
    # length norm computed once: PostgreSQL evaluates float expressions slowly (~2 us per
    # term and row when the weights were inlined into the per-row score).
    term_params: dict = {}
    tf_columns, df_columns, weight_columns, score_terms = [], [], [], []
    for i, lexeme in enumerate(estimated):
        operand = _tsquery_term(lexeme)
        term_params[f"k_a{i}"] = operand + ":A"
        term_params[f"k_b{i}"] = operand + ":B"
        term_params[f"k_s{i}"] = estimated[lexeme]
        tf_columns.append(
            f"(search_vector @@ %(k_a{i})s::tsquery)::int::float8 + %(k_context_tf)s::float8"
            f" * (search_vector @@ %(k_b{i})s::tsquery)::int::float8 AS tf{i}"
        )
        df_columns.append(f"count(*) FILTER (WHERE tf{i} > 0)::float8 AS df{i}")
        df = f"df{i}" if lexeme in candidate_terms else f"greatest(%(k_s{i})s::float8, df{i})"
        weight_columns.append(
            f"ln(1 + (%(k_count)s - least(%(k_count)s::float8, {df}) + 0.5)"
            f" / (least(%(k_count)s::float8, {df}) + 0.5)) * (%(k_k1)s::float8 + 1) AS w{i}"
        )
        score_terms.append(f"w{i} * tf{i} / (tf{i} + kn)")
    cursor.execute(
        f"""WITH candidates AS MATERIALIZED (
                SELECT id, {", ".join(tf_columns)},
                       %(k_k1)s::float8 * (1 - %(k_b)s::float8 + %(k_b)s::float8
                           * length(search_vector) / %(k_avgdl)s::float8) AS kn
                FROM ({candidates_sql}) AS scoped
                WHERE search_vector @@ %(k_candidates)s::tsquery LIMIT %(k_max_rows)s
            ),
            frequencies AS (SELECT {", ".join(df_columns)} FROM candidates),
            weights AS MATERIALIZED (SELECT {", ".join(weight_columns)} FROM frequencies),
            scored AS MATERIALIZED (
                SELECT id, {" + ".join(score_terms)} AS score FROM candidates, weights
            )
            SELECT id, score FROM scored WHERE score > 0
            ORDER BY score DESC, id DESC LIMIT %(k_limit)s""",
        {
            **bm25,
            **term_params,
            "k_count": float(count),
            "k_avgdl": mean_length,
            "k_candidates": candidate_query,
            "k_max_rows": BIG_SCOPE_CANDIDATES,
        },
    )
    return [(row[0], float(row[1])) for row in cursor.fetchall()]


@dataclass
class _TableStats:
    rows: float  # the planner's row count of rag_store (0 before the first ANALYZE)
    common_lexemes: dict[str, float]  # lexeme -> estimated rows holding it, frequent ones only


# (expiry on time.monotonic(), stats): see _table_stats.
_table_stats_cached: tuple[float, _TableStats] = (0.0, _TableStats(0.0, {}))


def _table_stats(cursor) -> _TableStats:
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
    stats = _TableStats(rows=rows, common_lexemes=common)
    _table_stats_cached = (time.monotonic() + GLOBAL_STATS_TTL_SECONDS, stats)
    return stats


def _phrase_filter(query: str) -> str | None:
    """The query itself when it uses web-search operators (quotes, -word): then every result
    must satisfy websearch_to_tsquery; plain questions keep OR semantics."""
    if '"' in query or re.search(r"(^|\s)-\w", query):
        return query
    return None


# --------------------------------------------------------------------------------------------
# Vector side
# --------------------------------------------------------------------------------------------


def _vector_candidates(
    cursor, *, scope: str, params: dict, vector: str, limit: int, scope_items: int | None = None
) -> list[tuple[int, float]]:
    """(id, cosine similarity) of the nearest items, nearest first.

    scope_items: the scope's item count when known (hybrid and keyword modes). A big scope is
    searched through the HNSW index whatever the planner estimates: an iterative scan reads
    at most about limit / selectivity rows (fewer: a user's nearest memories sit together),
    an exact search every row of the scope, so the index wins once scope_items^2 >=
    limit x table rows / 4. At 1M rows the planner estimated 6,500-6,900 rows for some
    10,000-item users and sorted all of them (15-18 ms where the index took ~3 ms).
    """
    if scope_items is not None and scope_items >= VECTOR_INDEX_MIN_ITEMS:
        if 4 * scope_items**2 >= limit * _table_stats(cursor).rows:
            scope = _without_user_index(scope)
    cursor.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
        " set_config('hnsw.ef_search', %s, true)",
        [str(max(100, limit))],
    )
    cursor.execute(
        f"""WITH nearest AS MATERIALIZED (
                SELECT id, embedding <=> %(v_vector)s::vector AS distance FROM rag_store
                WHERE {scope} AND embedding IS NOT NULL
                ORDER BY embedding <=> %(v_vector)s::vector LIMIT %(v_limit)s
            )
            SELECT id, 1 - distance FROM nearest ORDER BY distance, id DESC""",
        {**params, "v_vector": vector, "v_limit": limit},
    )
    # relaxed_order may return rows slightly out of order: re-sorted above by exact distance.
    return [(row[0], float(row[1])) for row in cursor.fetchall()]


def _without_user_index(scope: str) -> str:
    """The scope with its user condition written so no btree on user_id can serve it (the
    condition still filters every row the HNSW scan returns)."""
    return scope.replace(_USER_CONDITION, "user_id + 0 = %(s_user)s", 1)


# --------------------------------------------------------------------------------------------
# Ranking
# --------------------------------------------------------------------------------------------


def _load_candidates(
    cursor, ids: list[int], vector: str | None, known_similarity: dict[int, float]
) -> dict[int, _Candidate]:
    """The light columns ranking needs (no text): speaker, position, covered messages.

    Similarity is computed here only for items the vector side did not return (reading an
    embedding costs a TOAST fetch).
    """
    if not ids:
        return {}
    similarity_sql = (
        "CASE WHEN m.id = ANY(%(c_known)s) THEN NULL"
        " ELSE 1 - (m.embedding <=> %(c_vector)s::vector) END"
        if vector
        else "NULL::float8"
    )
    # A pair chunk is "covered" when its first message also has a message item; the probe is
    # a unique-index lookup per pair (LATERAL + LIMIT keeps the planner from hashing the
    # whole chunk_id index instead).
    covered_pair_sql = (
        """LEFT JOIN LATERAL (
               SELECT true AS covered FROM rag_store AS x
               WHERE m.source = 'chunk' AND coalesce(m.metadata->>'granularity', '') <> 'message'
                 AND cardinality(m.source_message_ids) > 0
                 AND x.chunk_id = 'msg-' || m.source_message_ids[1]
               LIMIT 1) AS pair ON true"""
        if PAIR_WEIGHT != 1.0
        else "LEFT JOIN (SELECT NULL::boolean AS covered) AS pair ON false"
    )
    cursor.execute(
        f"""SELECT m.id, m.source, m.chat_session_id::text,
                   extract(epoch FROM m.occurred_at)::float8, m.token_count, m.source_message_ids,
                   m.metadata->>'granularity' = 'message' AS is_message,
                   coalesce(m.metadata->>'speaker', ''),
                   CASE WHEN m.metadata->>'granularity' = 'message'
                        AND jsonb_typeof(m.metadata->'position') = 'number'
                        THEN (m.metadata->>'position')::int END,
                   pair.covered, {similarity_sql}
            FROM rag_store AS m {covered_pair_sql}
            WHERE m.id = ANY(%(c_ids)s)""",
        {"c_ids": ids, "c_vector": vector, "c_known": list(known_similarity)},
    )
    found = {}
    for row in cursor.fetchall():
        similarity = known_similarity.get(row[0], row[10])
        found[row[0]] = _Candidate(
            id=row[0],
            source=row[1],
            chat_session_id=row[2],
            occurred_epoch=row[3],
            token_count=row[4] or 0,
            source_message_ids=list(row[5] or []),
            is_message=bool(row[6]),
            speaker=row[7].lower(),
            position=row[8],
            is_covered_pair=bool(row[9]),
            similarity=float(similarity) if similarity is not None else None,
        )
    return found


def _rrf(ranking: list[tuple[int, float]], weight: float) -> dict[int, float]:
    return {item_id: weight / (RRF_K + rank) for rank, (item_id, _) in enumerate(ranking, 1)}


def _smooth_neighbours(candidates: dict[int, _Candidate]) -> None:
    """A message item gains NEIGHBOUR_WEIGHT x the best score of its adjacent messages."""
    by_position = {
        (c.chat_session_id, c.position): c
        for c in candidates.values()
        if c.is_message and c.position is not None
    }
    base = {item_id: c.score for item_id, c in candidates.items()}
    for candidate in by_position.values():
        best = max(
            (
                base[neighbour.id]
                for offset in (-1, 1)
                if (
                    neighbour := by_position.get(
                        (candidate.chat_session_id, candidate.position + offset)
                    )
                )
            ),
            default=0.0,
        )
        candidate.score += NEIGHBOUR_WEIGHT * best


def _recency_factor(occurred_epoch: float, now: float, half_life_days: float) -> float:
    age_days = max(0.0, (now - occurred_epoch) / 86400)
    return 0.5 + 0.5 * math.pow(0.5, age_days / half_life_days)


def _check_arguments(*, mode: str, sources, top_k: int) -> None:
    if mode not in MODES:
        raise InvalidInput(f"mode: one of {', '.join(MODES)}.", field="mode")
    unknown = [s for s in sources if s not in SOURCES]
    if unknown or not sources:
        raise InvalidInput(f"sources: a non-empty list of {', '.join(SOURCES)}.", field="sources")
    if top_k < 1:
        raise InvalidInput("top_k: at least 1.", field="top_k")


def memory_search(
    *,
    user,
    query: str,
    app_id: str = "default",
    top_k: int = 10,
    max_tokens: int | None = 4000,
    min_similarity: float | None = 0.0,
    sources: list[str] | tuple[str, ...] = SOURCES,
    mode: str = "hybrid",
    filters: SearchFilters | None = None,
    recency_half_life_days: float | None = None,
    query_embedding: list[float] | None = None,
) -> SearchResult:
    """Rank the caller's memories for `query`; never reads another user's or app's rows.

    Modes: "hybrid" (BM25 + vector fusion with the boosts above), "semantic" (cosine
    similarity only, score = similarity) and "keyword" (BM25 only, with the speaker rules).
    Items come in rank order, at most top_k, each new item skipped when the messages it covers
    are all covered by items already taken, stopping before the first item that would push the
    running token total past max_tokens (None: no budget). min_similarity drops items whose
    cosine similarity to the query is lower (not in keyword mode; None: no threshold). A query
    with web-search operators ("exact phrase", -word) only returns items matching them.
    Raises InvalidInput for an unknown mode/source and ProviderError when the query cannot be
    embedded (semantic and hybrid modes).
    """
    _check_arguments(mode=mode, sources=sources, top_k=top_k)
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
    phrase = _phrase_filter(query)
    if phrase:
        scope += " AND search_vector @@ websearch_to_tsquery('english', %(s_phrase)s)"
        params["s_phrase"] = phrase
    limit = max(CANDIDATES_PER_SIDE, top_k * 3)
    named: list[str] = []
    # SET LOCAL needs a transaction; atomic() reuses the caller's when there is one.
    with transaction.atomic(), connection.cursor() as cursor:
        keyword_rows: list[tuple[int, float]] = []
        stats = None
        if mode in ("hybrid", "keyword") and query.strip():
            stats = _scope_stats(cursor, scope=scope, params=params)
            named = _named_speakers(query[:MAX_KEYWORD_QUERY_CHARS], stats.speakers)
            keyword_rows = _bm25_candidates(
                cursor,
                scope=scope,
                params=params,
                query=query[:MAX_KEYWORD_QUERY_CHARS],
                drop_name=named[0] if len(named) == 1 else "",
                stats=stats,
                limit=limit,
            )
        vector_rows = (
            _vector_candidates(
                cursor,
                scope=scope,
                params=params,
                vector=vector,
                limit=limit,
                scope_items=stats.count if stats else None,
            )
            if vector
            else []
        )
        if mode == "hybrid":
            fused = _rrf(keyword_rows, KEYWORD_WEIGHT)
            for item_id, value in _rrf(vector_rows, VECTOR_WEIGHT).items():
                fused[item_id] = fused.get(item_id, 0.0) + value
        elif mode == "keyword":
            fused = dict(keyword_rows)
        else:
            fused = dict(vector_rows)
        candidates = _load_candidates(cursor, list(fused), vector, dict(vector_rows))
        keyword_scores = dict(keyword_rows)
        for item_id, candidate in candidates.items():
            candidate.score = fused[item_id]
            candidate.keyword_score = keyword_scores.get(item_id)
        ranked = _rank(
            candidates,
            mode=mode,
            named=named,
            min_similarity=min_similarity,
            recency_half_life_days=recency_half_life_days,
        )
        packed, used = _pack(ranked, top_k=top_k, max_tokens=max_tokens)
        hits = _load_hits(cursor, packed)
    return SearchResult(
        items=hits,
        total_tokens_used=used,
        query_embedding_ms=round(embed_ms, 2),
        search_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _rank(
    candidates: dict[int, _Candidate],
    *,
    mode: str,
    named: list[str],
    min_similarity: float | None,
    recency_half_life_days: float | None,
) -> list[_Candidate]:
    if mode == "hybrid":
        _smooth_neighbours(candidates)
    if mode != "semantic":
        if len(named) == 1:
            speaker = named[0].lower()
            for candidate in candidates.values():
                if candidate.is_message and candidate.speaker == speaker:
                    candidate.score *= SPEAKER_BOOST
        for candidate in candidates.values():
            if candidate.is_covered_pair:
                candidate.score *= PAIR_WEIGHT
            if candidate.source == MemoryItem.Source.SUMMARY:
                candidate.score *= SUMMARY_WEIGHT
    now = timezone.now().timestamp()
    kept = []
    for candidate in candidates.values():
        if (
            mode != "keyword"
            and min_similarity is not None
            and candidate.similarity is not None
            and candidate.similarity < min_similarity
        ):
            continue
        if recency_half_life_days:
            candidate.score *= _recency_factor(
                candidate.occurred_epoch, now, recency_half_life_days
            )
        kept.append(candidate)
    kept.sort(key=lambda c: (-c.score, -(c.similarity or 0.0), -c.id))
    return kept


def _pack(
    ranked: list[_Candidate], *, top_k: int, max_tokens: int | None
) -> tuple[list[_Candidate], int]:
    packed: list[_Candidate] = []
    covered: set[int] = set()
    used = 0
    for candidate in ranked:
        if len(packed) >= top_k:
            break
        messages = set(candidate.source_message_ids)
        if messages and messages <= covered:
            continue
        if max_tokens is not None and used + candidate.token_count > max_tokens:
            break
        packed.append(candidate)
        covered |= messages
        used += candidate.token_count
    return packed, used


def _load_hits(cursor, packed: list[_Candidate]) -> list[SearchHit]:
    if not packed:
        return []
    cursor.execute(
        "SELECT id, content, header, created_at, metadata, topics, occurred_at FROM rag_store"
        " WHERE id = ANY(%s)",
        [[c.id for c in packed]],
    )
    rows = {row[0]: row for row in cursor.fetchall()}
    hits = []
    for candidate in packed:
        row = rows.get(candidate.id)
        if row is None:  # deleted meanwhile
            continue
        # Django's psycopg setup hands raw-cursor jsonb back as text.
        metadata = json.loads(row[4]) if isinstance(row[4], str) else row[4] or {}
        hits.append(
            SearchHit(
                id=candidate.id,
                source=candidate.source,
                content=row[1],
                header=row[2],
                score=candidate.score,
                similarity=candidate.similarity,
                keyword_rank=candidate.keyword_score,
                created_at=row[3],
                occurred_at=row[6],
                metadata=metadata,
                topics=list(row[5] or []),
                chat_session_id=candidate.chat_session_id,
                token_count=candidate.token_count,
                source_message_ids=candidate.source_message_ids,
            )
        )
    return hits


# --------------------------------------------------------------------------------------------
# Rendering and stats
# --------------------------------------------------------------------------------------------


def format_date(moment: datetime | None) -> str:
    if moment is None:
        return ""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    return f"{local.day} {local:%B %Y}"


def format_hit(hit: SearchHit) -> str:
    """One memory as the pack shows it: `(8 May 2023) "Caroline: text"` (quoted data).

    The date is the one thing a reader cannot infer from the text and temporal questions need
    it; the source is named for everything but conversation messages. The contextual header
    is indexed, never shown: a 2-4 sentence header would eat the budget of a whole memory.
    """
    parts = [format_date(hit.occurred_at)]
    if (hit.metadata or {}).get("granularity") != "message":
        parts.append(hit.source)
    label = ", ".join(part for part in parts if part)
    text = " ".join(hit.content.split())
    return f'({label}) "{text}"' if label else f'"{text}"'


def format_for_prompt(items: list[SearchHit]) -> str:
    """The retrieved-knowledge block of the context pack: quoted data, one line per memory."""
    return "\n".join(format_hit(hit) for hit in items)


def memory_stats(*, user, app_id: str | None = None, top_topics: int = 50) -> dict:
    """Totals of the caller's memories by source, project and topic (the `top_topics` most
    used topics); one app's when app_id is given."""
    items = MemoryItem.objects.filter(user=user)
    if app_id:
        items = items.filter(app_id=app_id)
    by_source = {source: 0 for source in SOURCES}
    by_source.update(
        dict(
            items.order_by()
            .values_list("source")
            .annotate(n=Count("id"))
            .values_list("source", "n")
        )
    )
    by_project = dict(
        items.order_by()
        .values_list("project_id")
        .annotate(n=Count("id"))
        .values_list("project_id", "n")
    )
    with connection.cursor() as cursor:
        app_clause = "AND app_id = %s" if app_id else ""
        cursor.execute(
            f"""SELECT topic, count(*) FROM rag_store, unnest(topics) AS topic
                WHERE user_id = %s {app_clause}
                GROUP BY topic ORDER BY count(*) DESC, topic LIMIT %s""",
            [user.pk, *([app_id] if app_id else []), top_topics],
        )
        by_topic = dict(cursor.fetchall())
    return {
        "total": sum(by_source.values()),
        "by_source": by_source,
        "by_project": by_project,
        "by_topic": by_topic,
    }
