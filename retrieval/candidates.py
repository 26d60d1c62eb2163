"""The rag_store's candidate reads for a search: BM25 over the search vector (keyword side),
HNSW cosine neighbours (vector side), the light columns ranking needs and the hits' text.

Fusion, ranking and packing live in retrieval.search (memory_search) and what a result looks
like in retrieval.hits; every statement here starts from a scope built by
retrieval.scope.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import psycopg

from mnemo_text.accents import fold_accents
from retrieval import scope as search_scope
from retrieval.config import ranking_config
from retrieval.scope import ScopeStats


@dataclass
class Candidate:
    id: int
    source: str
    chat_session_id: str | None
    occurred_epoch: float  # seconds: what ranking compares; `occurred_at` is derived from it
    token_count: int
    source_message_ids: list[int]
    is_message: bool
    speaker: str
    position: int | None
    is_covered_pair: bool
    similarity: float | None
    keyword_score: float | None = None
    score: float = 0.0
    # The exchange it belongs to (metadata["exchange_key"], written by the message indexer).
    exchange_key: str = ""
    # A short message item that only asks (ends with "?"): ranked below the statements.
    is_question: bool = False
    keyword_rank: int | None = None
    vector_rank: int | None = None
    # Rank and score on the entity leg (the item mentions an entity the query names).
    entity_rank: int | None = None
    entity_score: float | None = None
    recency_factor: float | None = None
    relevance: float = 0.0
    # Its user's words state a value of the relation the query asks about ("I moved to Denver"
    # for "where do I live?": trust.relation_relevance_apply).
    states_asked_relation: bool = False
    # What the query floor reads when it differs from `relevance` (set by trust.coverage_assign;
    # the later rules that move `relevance` move it too).
    floor_relevance: float | None = None
    # The other turn of its exchange, shown in the same slot (retrieval.search.stage_pack).
    merged: list[Candidate] = field(default_factory=list)
    # What a hit shows, read by the same statement (`candidates_load`): the trust rules read the
    # top items' text and `hits_build` the shown ones' without another round trip.
    content: str = ""
    header: str = ""
    created_at: datetime | None = None
    metadata: dict | str | None = None  # jsonb as the driver hands it (text: parsed when shown)
    # Who said it: "user" or "assistant" for a turn or a passage of one, "" for other items.
    role: str = ""
    topics: list[str] = field(default_factory=list)
    bucket: str = ""

    @property
    def occurred_at(self) -> datetime:
        return datetime.fromtimestamp(self.occurred_epoch, tz=UTC)

    @property
    def conversation(self) -> str:
        """The chat it was said in: a live session, or an imported conversation (the part of
        the exchange key before the turn number); "" when neither is known."""
        return self.chat_session_id or self.exchange_key.rpartition(":")[0]


@dataclass(frozen=True)
class Statement:
    """One SELECT of a leg and how its rows become the leg's result, so several legs can go to
    the database in one round trip (`statements_run`)."""

    sql: str
    params: dict
    read: Callable[[list[tuple]], object]


def statements_run(cursor, statements: list[Statement]) -> list:
    """Each statement's result, in order, from one round trip: the statements are pipelined
    on the caller's connection (inside its transaction, in order) with server-side binding,
    so the driver prepares a statement it has run a few times on this connection and the
    database plans it once instead of on every search. Each goes through Django's cursor
    wrapper: execute wrappers and query logging see every statement (logged with its $n
    placeholders, and timed as queued: the round trip happens when the pipeline ends), and
    the database's errors come out as Django's own."""
    if not statements:
        return []
    connection = cursor.db
    raw = connection.connection
    cursors = [
        (connection.make_debug_cursor if connection.queries_logged else connection.make_cursor)(
            psycopg.Cursor(raw)
        )
        for _ in statements
    ]
    try:
        with connection.wrap_database_errors:
            with raw.pipeline():
                for server_cursor, statement in zip(cursors, statements, strict=True):
                    server_cursor.execute(statement.sql, statement.params)
            return [
                statement.read(server_cursor.fetchall())
                for server_cursor, statement in zip(cursors, statements, strict=True)
            ]
    finally:
        for server_cursor in cursors:
            server_cursor.close()


def _scored_rows(rows: list[tuple]) -> list[tuple[int, float]]:
    return [(row[0], float(row[1])) for row in rows]


# --------------------------------------------------------------------------------------------
# Keyword side: BM25 in SQL
# --------------------------------------------------------------------------------------------


def _tsquery_term(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand (already normalised: no second stemming)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def query_lexemes_statement(*, query: str, dropped_words: str) -> Statement:
    """The lexemes the keyword leg searches: the query's (english config, the first
    `max_query_terms` in text order), without the dropped words' unless nothing else remains.

    A statement of its own, so the scoring statement can hold one column per lexeme instead
    of joining the lexemes to the rows (a row per item and lexeme, aggregated twice: far more
    executor work than the tests themselves)."""
    return Statement(
        """SELECT t.lexeme,
                  t.lexeme IN (SELECT n.lexeme FROM unnest(to_tsvector('english', %(q_drop)s)) AS n)
           FROM unnest(to_tsvector('english', %(q_query)s)) AS t
           ORDER BY t.positions[1] LIMIT %(q_max_terms)s""",
        {
            "q_query": fold_accents(query),
            "q_drop": fold_accents(dropped_words),
            "q_max_terms": ranking_config().max_query_terms,
        },
        _kept_lexemes,
    )


def _kept_lexemes(rows: list[tuple]) -> list[str]:
    kept = [lexeme for lexeme, dropped in rows if not dropped]
    return kept or [lexeme for lexeme, _ in rows]


def _scored_statement(
    *,
    lexemes: list[str],
    rows_sql: str,
    candidate_query: str,
    params: dict,
    count: float,
    mean_length: float,
    limit: int,
    sampled_df: dict[str, float] | None = None,
    max_rows: int | None = None,
) -> Statement:
    """BM25 of the scope's rows matching `candidate_query` (a tsquery), best first: one row
    per candidate with one tf column per lexeme (1 in the item's own text, weight A, plus
    `context_tf_weight` in its keyword context, weight B), each lexeme's document frequency
    counted over the candidates (at least its `sampled_df` when given: a big scope's rows are
    not all read), each lexeme's weight (idf x (k1 + 1)) and each row's length norm computed
    once. Occurrence counts are not used: items are mostly one message, and counting
    positions needs unnest() of every candidate's vector for no gain in recall."""
    if not lexemes:
        raise ValueError("BM25 needs at least one lexeme (an empty query has no keyword leg)")
    config = ranking_config()
    term_params: dict = {}
    tf_columns, df_columns, weight_columns, score_terms = [], [], [], []
    for i, lexeme in enumerate(lexemes):
        operand = _tsquery_term(lexeme)
        term_params[f"k_a{i}"] = operand + ":A"
        term_params[f"k_b{i}"] = operand + ":B"
        tf_columns.append(
            f"(search_vector @@ %(k_a{i})s::tsquery)::int::float8 + %(k_context_tf)s::float8"
            f" * (search_vector @@ %(k_b{i})s::tsquery)::int::float8 AS tf{i}"
        )
        df_columns.append(f"count(*) FILTER (WHERE tf{i} > 0)::float8 AS df{i}")
        df = f"df{i}"
        if sampled_df is not None and lexeme in sampled_df:
            term_params[f"k_s{i}"] = sampled_df[lexeme]
            df = f"greatest(%(k_s{i})s::float8, df{i})"
        weight_columns.append(
            f"ln(1 + (%(k_count)s::float8 - least(%(k_count)s::float8, {df}) + 0.5)"
            f" / (least(%(k_count)s::float8, {df}) + 0.5)) * (%(k_k1)s::float8 + 1) AS w{i}"
        )
        score_terms.append(f"w{i} * tf{i} / (tf{i} + kn)")
    row_limit = "LIMIT %(k_max_rows)s" if max_rows is not None else ""
    return Statement(
        f"""WITH candidates AS MATERIALIZED (
                SELECT id, {", ".join(tf_columns)},
                       %(k_k1)s::float8 * (1 - %(k_b)s::float8 + %(k_b)s::float8
                           * length(search_vector) / %(k_avgdl)s::float8) AS kn
                FROM ({rows_sql}) AS scoped
                WHERE search_vector @@ %(k_candidates)s::tsquery {row_limit}
            ),
            frequencies AS (SELECT {", ".join(df_columns)} FROM candidates),
            weights AS MATERIALIZED (SELECT {", ".join(weight_columns)} FROM frequencies),
            scored AS MATERIALIZED (
                SELECT id, {" + ".join(score_terms)} AS score FROM candidates, weights
            )
            SELECT id, score FROM scored WHERE score > 0
            ORDER BY score DESC, id DESC LIMIT %(k_limit)s""",
        {
            **params,
            **term_params,
            "k_context_tf": float(config.context_tf_weight),
            "k_k1": float(config.bm25_k1),
            "k_b": float(config.bm25_b),
            "k_count": float(count),
            "k_avgdl": float(mean_length or 1.0),
            "k_candidates": candidate_query,
            "k_limit": limit,
            **({"k_max_rows": max_rows} if max_rows is not None else {}),
        },
        _scored_rows,
    )


def bm25_statement(
    *, scope: str, params: dict, lexemes: list[str], stats: ScopeStats, limit: int
) -> Statement | None:
    """The one statement that scores a scope of up to `single_statement_items` items exactly:
    (id, BM25 score) of the best matches of `lexemes` (at least one:
    `query_lexemes_statement`), best first; None for a bigger scope.

    The scope's rows are read through its own index and filtered (document frequencies counted
    on the matching rows themselves). The GIN index is kept out of it on purpose: one common
    query word has a posting list of half the table, far more to read than the scope's rows.
    """
    if stats.count > ranking_config().single_statement_items:
        return None
    return _scored_statement(
        lexemes=lexemes,
        # OFFSET 0: the scope's rows are read through its own index, never through GIN.
        rows_sql=f"SELECT id, search_vector FROM rag_store WHERE {scope} OFFSET 0",
        candidate_query=" | ".join(_tsquery_term(lexeme) for lexeme in lexemes),
        params=params,
        # Cached briefly: a document frequency above it (rows written since) counts as it.
        count=stats.count,
        mean_length=stats.mean_length,
        limit=limit,
    )


def bm25_big_scope(
    cursor, *, scope: str, params: dict, lexemes: list[str], stats: ScopeStats, limit: int
):
    """BM25 over a big scope in two statements, reading a few hundred rows instead of all.

    1. How many of the scope's first DF_SAMPLE_ITEMS rows (storage order, i.e. roughly the
       oldest) hold each lexeme: document frequency estimated from that sample (counting
       every match of a common word in a big scope reads most of it; idf is a logarithm, so a
       sampled df moves it by a few percent).
    2. Candidates are the scope's rows matching the rarest terms (summed estimated df up to
       PRUNE_DF, at least the rarest), found through the GIN index; their df is counted
       exactly on those rows, every other term adds to their score with its sampled df. A
       row matching only common terms scores below a row holding a rare one, so the top of
       the ranking is the exact one's (MaxScore-like pruning). A term common over the whole
       table is never looked up through GIN (GIN_GLOBAL_ROWS); when no term qualifies, the
       scope's rows are scanned, at most BIG_SCOPE_CANDIDATES matches.
    """
    if not lexemes:
        return []
    config = ranking_config()
    cursor.execute(
        f"""WITH sample AS MATERIALIZED (
                SELECT search_vector FROM rag_store WHERE {scope} LIMIT %(k_sample)s
            )
            SELECT term.operand,
                   (SELECT count(*) FROM sample WHERE search_vector @@ term.operand::tsquery),
                   (SELECT count(*) FROM sample),
                   (SELECT avg(length(search_vector)) FROM sample)
            FROM unnest(%(k_operands)s::text[]) WITH ORDINALITY AS term(operand, position)
            ORDER BY term.position""",
        {
            **params,
            "k_sample": config.df_sample_items,
            "k_operands": [_tsquery_term(lexeme) for lexeme in lexemes],
        },
    )
    rows = cursor.fetchall()
    if not rows:
        return []
    sample_size = max(1, rows[0][2])
    count = max(stats.count, sample_size)
    mean_length = stats.mean_length or float(rows[0][3] or 0) or 1.0
    # Sampled df, never below 0.5 (a term absent from the sample may still occur).
    estimated = {
        lexeme: max(0.5, hits * count / sample_size)
        for lexeme, (_, hits, _, _) in zip(lexemes, rows, strict=True)
    }
    common = search_scope.table_stats(cursor).common_lexemes
    candidate_terms, total = [], 0.0
    for lexeme in sorted(estimated, key=lambda lexeme: estimated[lexeme]):
        # Cost of a term: its rows in the scope, plus its posting list read from GIN.
        cost = estimated[lexeme] + common.get(lexeme, 0) * config.gin_row_cost
        if candidate_terms and total + cost > config.prune_df:
            break
        if common.get(lexeme, 0) > config.gin_global_rows:
            continue
        candidate_terms.append(lexeme)
        total += cost
    if candidate_terms:
        rows_sql = f"SELECT id, search_vector FROM rag_store WHERE {scope}"
        candidate_query = " | ".join(_tsquery_term(lexeme) for lexeme in candidate_terms)
    else:
        rows_sql = f"SELECT id, search_vector FROM rag_store WHERE {scope} OFFSET 0"
        candidate_query = " | ".join(_tsquery_term(lexeme) for lexeme in estimated)
    statement = _scored_statement(
        lexemes=list(estimated),
        rows_sql=rows_sql,
        candidate_query=candidate_query,
        params=params,
        count=count,
        mean_length=mean_length,
        limit=limit,
        # A candidate term's df is the exact one (all its rows are candidates).
        sampled_df={
            lexeme: df for lexeme, df in estimated.items() if lexeme not in candidate_terms
        },
        max_rows=config.big_scope_candidates,
    )
    return statements_run(cursor, [statement])[0]


def phrase_filter(query: str) -> str | None:
    """The query itself when it uses web-search operators (quotes, -word): then every result
    must satisfy websearch_to_tsquery; plain questions keep OR semantics."""
    if '"' in query or re.search(r"(^|\s)-\w", query):
        return query
    return None


# --------------------------------------------------------------------------------------------
# Vector side
# --------------------------------------------------------------------------------------------


def vector_candidates(
    cursor, *, scope: str, params: dict, vector: str, limit: int, scope_items: int | None = None
) -> list[tuple[int, float]]:
    """(id, cosine similarity) of the nearest items, nearest first (see `vector_statements`)."""
    settings, search = vector_statements(
        cursor, scope=scope, params=params, vector=vector, limit=limit, scope_items=scope_items
    )
    return statements_run(cursor, [settings, search])[1]


def vector_statements(
    cursor, *, scope: str, params: dict, vector: str, limit: int, scope_items: int | None = None
) -> tuple[Statement, Statement]:
    """The index settings and the search for the nearest items (id, cosine similarity),
    nearest first; the settings must run first, in the same transaction.

    scope_items: the scope's item count when known (hybrid and keyword modes). A big scope is
    searched through the HNSW index whatever the planner estimates: an iterative scan reads
    at most about limit / selectivity rows (fewer: a user's nearest memories sit together),
    an exact search every row of the scope, so the index wins once scope_items^2 >=
    limit x table rows / 4 (the planner underestimates big users' rows on a big table and
    would sort all of them). A smaller scope is sorted exactly, whatever the planner would
    choose: reading its rows costs less than walking the graph past other users' rows, and
    the nearest items are then the exact ones.
    """
    if scope_items is not None and scope_items >= ranking_config().vector_index_min_items:
        if 4 * scope_items**2 >= limit * search_scope.table_stats(cursor).rows:
            scope = search_scope.without_user_index(scope)
    rows = f"rag_store WHERE {scope} AND embedding IS NOT NULL"
    if scope_items is not None and scope_items < ranking_config().vector_index_min_items:
        # OFFSET 0: the rows are read first and then sorted, never found through the index.
        rows = f"(SELECT id, embedding FROM {rows} OFFSET 0) AS scoped"
    settings = Statement(
        """SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
                  set_config('hnsw.ef_search', %(v_ef_search)s, true)""",
        {"v_ef_search": str(max(100, limit))},
        lambda rows: None,
    )
    # relaxed_order may return rows slightly out of order: re-sorted by exact distance.
    search = Statement(
        f"""WITH nearest AS MATERIALIZED (
                SELECT id, embedding <=> %(v_vector)s::vector AS distance FROM {rows}
                ORDER BY embedding <=> %(v_vector)s::vector LIMIT %(v_limit)s
            )
            SELECT id, 1 - distance FROM nearest ORDER BY distance, id DESC""",
        {**params, "v_vector": vector, "v_limit": limit},
        _scored_rows,
    )
    return settings, search


# candidates_load's first name column (after the ranking and display columns).
_NAME_COLUMNS = 20


def candidates_load(
    cursor,
    ids: list[int],
    vector: str | None,
    known_similarity: dict[int, float],
    *,
    probe_covered_pairs: bool,
    names: list[str] = (),
    scope: str = "",
    params: dict | None = None,
    names_found: set[str] | None = None,
) -> dict[int, Candidate]:
    """What ranking needs (speaker, position, covered messages) and what a hit shows (text,
    header, dates, metadata, topics, bucket), in one statement: the loaded candidates are the
    only items the later stages read, so neither the trust rules' texts nor the hits cost a
    round trip of their own.

    probe_covered_pairs: whether to look up which turn-pair chunks have message items (only
    needed when the ranking weighs such pairs differently).

    names (with the search's scope and params): the query's names that some candidate in
    scope holds are added to `names_found`, read by the same statement (an initplan per name
    that stops at the first candidate holding it), so trust.names_missing checks
    the whole scope only for the others (one statement fewer per search).

    Similarity is computed here only for items the vector side did not return (reading an
    embedding costs a TOAST fetch).
    """
    if not ids:
        return {}
    similarity_sql = (
        "CASE WHEN m.id = ANY(%(c_known)s::bigint[]) THEN NULL"
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
        if probe_covered_pairs
        else "LEFT JOIN (SELECT NULL::boolean AS covered) AS pair ON false"
    )
    # Each name's probe reads the candidates in the given order (the keyword side's best
    # first: they hold the query's words) by primary key, one at a time (OFFSET 0: else the
    # planner ANDs the name's GIN list with the user's btree, every row of the user, the
    # cost this probe avoids), and stops at the first that holds the name.
    name_sql = "".join(
        f""", (SELECT EXISTS (
                   SELECT 1 FROM unnest(%(c_ids)s::bigint[]) AS probe(probe_id)
                   CROSS JOIN LATERAL (
                       SELECT * FROM rag_store WHERE id = probe.probe_id OFFSET 0
                   ) AS rag_store
                   WHERE {scope}
                     AND search_vector @@ plainto_tsquery('english', %(c_name{index})s)))"""
        for index in range(len(names) if scope else 0)
    )
    # Both dates come as epochs (microseconds exact in float8 for any date near now): building
    # a datetime from a number is several times cheaper than parsing a timestamp's text.
    statement_params = {
        **(
            {
                **(params or {}),
                **{f"c_name{i}": fold_accents(name) for i, name in enumerate(names)},
            }
            if name_sql
            else {}
        ),
        "c_ids": ids,
        "c_vector": vector,
        "c_known": list(known_similarity),
        "c_short": ranking_config().question_max_chars,
    }
    sql = f"""SELECT m.id, m.source, m.chat_session_id::text,
                   extract(epoch FROM m.occurred_at)::float8, m.token_count, m.source_message_ids,
                   m.metadata->>'granularity' = 'message' AS is_message,
                   coalesce(m.metadata->>'speaker', ''),
                   CASE WHEN m.metadata->>'granularity' = 'message'
                        AND jsonb_typeof(m.metadata->'position') = 'number'
                        THEN (m.metadata->>'position')::int END,
                   pair.covered, {similarity_sql},
                   coalesce(m.metadata->>'exchange_key', ''),
                   m.metadata->>'granularity' = 'message' AND length(m.content) < %(c_short)s
                       AND right(rtrim(m.content), 1) = '?' AS is_question,
                   m.content, m.header, extract(epoch FROM m.created_at)::float8,
                   m.metadata, m.topics, m.bucket, coalesce(m.metadata->>'role', '')
                   {name_sql}
            FROM rag_store AS m {covered_pair_sql}
            WHERE m.id = ANY(%(c_ids)s::bigint[])"""

    def read(rows: list[tuple]) -> dict[int, Candidate]:
        return _candidates_read(rows, names, names_found if name_sql else None, known_similarity)

    return statements_run(cursor, [Statement(sql, statement_params, read)])[0]


def _candidates_read(
    rows: list[tuple],
    names: list[str],
    names_found: set[str] | None,
    known_similarity: dict[int, float],
) -> dict[int, Candidate]:
    found = {}
    if rows and names_found is not None:
        names_found.update(
            name for name, held in zip(names, rows[0][_NAME_COLUMNS:], strict=True) if held
        )
    for row in rows:
        similarity = known_similarity.get(row[0], row[10])
        found[row[0]] = Candidate(
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
            exchange_key=row[11] or "",
            is_question=bool(row[12]),
            content=row[13] or "",
            header=row[14] or "",
            created_at=datetime.fromtimestamp(row[15], tz=UTC),
            metadata=row[16],
            topics=list(row[17] or []),
            bucket=row[18] or "",
            role=row[19],
        )
    return found
