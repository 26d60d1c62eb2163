"""Retrieval: the one hybrid search over the rag_store, scoped to the caller before ranking.

`memory_search` is the entry point; it runs the stages below over one `SearchState`. The legs'
SQL is `retrieval.candidates` (on the scope rule of `retrieval.scope`), the
rerank and floor rules `retrieval.trust`, display `retrieval.display`, every setting
`retrieval.config.RankingConfig`.

Used by the context pack's [Relevant memories], the memory browser, MCP and the search API. Every
statement filters on (user, app_id, sources, filters) before anything is ranked, so another
user's or app's rows can never reach a ranking.

Design (`bench/locomo.py` measures it; the figures that chose it are in bench/RESULTS.md):

- Keyword side: Okapi BM25 computed in SQL over the `search_vector` lexemes (english config;
  `ts_rank_cd` has no inverse document frequency). Words of the item itself (weight A) count
  fully, its keyword context (weight B: a message's neighbours) at a share of term frequency.
  Scope statistics (count, mean length, speakers) are cached for a minute. Scopes up to
  `single_statement_items` items are scored exactly in one statement over their own rows (never
  through the GIN index: one common word's posting list costs more than the whole scope).
  Bigger scopes estimate document frequencies from a sample and draw candidates from the
  rarest terms only, found through GIN (MaxScore-like pruning; the common terms still add to
  their score), so their top results are the exact ranking's.
- Vector side: cosine distance, a small scope sorted exactly; a scope too big for that
  searched through pgvector HNSW with iterative index scans, so the user filter keeps its
  recall (retrieval.candidates.vector_statements).
- Fusion: weighted reciprocal rank fusion (the vector leg weighs less than the keyword leg:
  the local embedder is weaker than BM25 on conversation recall; RankingConfig has the
  weights); a message item also gets a share of the best fused score of its neighbouring
  messages (answers sit next to the matched question); when the query names exactly one of
  the conversation's speakers, that name is dropped from the keyword query and its direction
  from the query's vector, and their messages are boosted.
- Entity leg: items that mention an entity (person, pet, place...) the query names or an alias
  of one ("my sister"), ranked by the summed rarity of those entities, fused at ENTITY_WEIGHT
  (entities_app.selectors; hybrid mode only).
- Optional recency weight, a similarity threshold, scope filters. Packing walks the ranking,
  skips an item whose messages are all covered by items already taken (turn-pair chunks and
  message items overlap) and stops before max_tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from entities_app.selectors import (
    QueryEntity,
    entities_mentioned_in_buckets,
    entities_of_items,
)
from ingestion_app.selectors import vector_literal
from memory_site import metrics
from memory_site.errors import InvalidInput
from mnemo_text.accents import fold_accents
from mnemo_text.fact_updates import question_relation
from retrieval import candidates as search_candidates
from retrieval import display, trust
from retrieval import scope as search_scope
from retrieval.candidates import Candidate
from retrieval.config import RankingConfig, ranking_config, ranking_with
from retrieval.display import format_date, format_for_prompt, format_hit
from retrieval.entity_leg import entity_leg_statement
from retrieval.hits import SearchHit, hits_build
from retrieval.query import (
    embedder_available,
    query_vector,
    scope_speakers_named,
    search_vector_text,
)
from retrieval.ranking import pack_slots, rank_candidates, rrf
from retrieval.scope import SOURCES, SearchFilters

# Re-exported: the search API, the pages and the context pack take them from here.
__all__ = [
    "MODES",
    "SOURCES",
    "SearchFilters",
    "SearchHit",
    "SearchResult",
    "format_date",
    "format_for_prompt",
    "format_hit",
    "memory_search",
    "search_entities",
    "search_vector_text",
]

MODES = ("hybrid", "semantic", "keyword")


@dataclass
class SearchResult:
    items: list[SearchHit]
    total_tokens_used: int
    query_embedding_ms: float
    search_ms: float
    # Entities the query names (the entity leg's input), most mentioned first.
    entities: list[QueryEntity] = field(default_factory=list)
    # With a `stage_clock`: its ms per stage (candidates: the legs' SQL; fuse: fusion and the
    # candidates' load, text included; rerank: the trust rules and their reads; floor; pack:
    # packing, supersede and the hits; trim: trimming and the budget).
    stage_ms: dict[str, float] = field(default_factory=dict)


class _StageTimes:
    """Differences of a caller's clock between the search's stages (nothing without one)."""

    def __init__(self, clock: Callable[[], float | None] | None):
        self.clock = clock
        self.elapsed: dict[str, float] = {}
        self._last = clock() if clock else None

    def mark(self, stage: str) -> None:
        if self.clock is None:
            return
        now = self.clock()
        if now is not None and self._last is not None:
            self.elapsed[stage] = round(now - self._last, 3)
        self._last = now


# --------------------------------------------------------------------------------------------
# Ranking
# --------------------------------------------------------------------------------------------


def _check_arguments(*, mode: str, sources, top_k: int) -> None:
    if mode not in MODES:
        raise InvalidInput(f"mode: one of {', '.join(MODES)}.", field="mode")
    unknown = [s for s in sources if s not in SOURCES]
    if unknown or not sources:
        raise InvalidInput(f"sources: a non-empty list of {', '.join(SOURCES)}.", field="sources")
    if top_k < 1:
        raise InvalidInput("top_k: at least 1.", field="top_k")


@dataclass
class SearchState:
    """What one search knows, filled stage by stage (see `_search` for the order)."""

    # The request.
    user_id: int
    app_id: str
    query: str
    mode: str
    top_k: int
    max_tokens: int | None
    min_similarity: float | None
    min_relevance: float | None
    recency_half_life_days: float | None
    now: float  # `as_of` (default now) as epoch seconds: newer-beats-older is relative to it
    trim: bool
    gists: bool
    # The scope every statement starts from, and what the query says about it.
    scope: str = ""
    params: dict = field(default_factory=dict)
    stats: search_scope.ScopeStats | None = None
    named: list[str] = field(default_factory=list)  # the conversation's speakers it names
    vector: str | None = None  # the query's embedding, a pgvector literal
    embed_ms: float = 0.0
    limit: int = 0  # candidates per leg
    # candidates
    keyword_rows: list[tuple[int, float]] = field(default_factory=list)
    vector_rows: list[tuple[int, float]] = field(default_factory=list)
    entity_rows: list[tuple[int, float]] = field(default_factory=list)
    query_entities: list = field(default_factory=list)
    # fuse
    fused: dict[int, float] = field(default_factory=dict)
    candidates: dict[int, Candidate] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)  # capitalised names the query holds
    names_found: set[str] = field(default_factory=set)
    # rerank
    ranked: list[Candidate] = field(default_factory=list)
    texts: dict[int, tuple[str, str]] = field(default_factory=dict)
    stated: dict[int, tuple] = field(default_factory=dict)
    relation: str = ""
    updates: set = field(default_factory=set)
    # pack
    packed: list[Candidate] = field(default_factory=list)
    superseded: dict = field(default_factory=dict)
    hits: list[SearchHit] = field(default_factory=list)
    used: int = 0

    @property
    def asked(self) -> str:
        """The query as the keyword side reads it (a pasted document: only its start)."""
        return self.query[: ranking_config().max_keyword_query_chars]


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
    query_embedding_text: str | None = None,
    as_of: datetime | None = None,
    min_relevance: float | None = None,
    trim: bool = True,
    gists: bool = True,
    stage_clock: Callable[[], float | None] | None = None,
    config: RankingConfig | None = None,
) -> SearchResult:
    """Rank the caller's memories for `query`; never reads another user's or app's rows.

    Modes: "hybrid" (BM25 + vector fusion with the boosts above), "semantic" (cosine
    similarity only, score = similarity) and "keyword" (BM25 only, with the speaker rules).
    Items come in rank order, at most top_k, each new item skipped when the messages it covers
    are all covered by items already taken, stopping before the first item that would push the
    running token total past max_tokens (None: no budget). min_similarity drops items whose
    cosine similarity to the query is lower (not in keyword mode; None: no threshold). A query
    with web-search operators ("exact phrase", -word) only returns items matching them.

    Trust rules (retrieval.trust): each hit carries `relevance` and `why`; when the
    best candidate's relevance is under `min_relevance` (default: the config's
    relevance_floor) nothing is returned; an exchange takes one slot; a long item is cut to
    the passage that matches, a chat turn to what it tells without the reactions and the
    questions to the other person around it, and below the first results to its gist
    (display.gist_trim; `trimmed`; trim=False: every item whole; gists=False: no
    gists); between two memories about the same subject the one said later (at or before
    `as_of`, default now) comes first and the older is `superseded`.
    `config`: the ranking settings (default: the config active here, `RANKING` unless a
    caller runs the search inside `ranking_with`).
    `stage_clock` (benchmarks): a clock in ms read between the stages (candidates, fuse,
    rerank, pack), whose differences come back in `stage_ms`.
    `query_embedding`: the vector of `query_embedding_text` (default: of `query`), embedded by
    the caller; the search embeds nothing when that is the text its vector leg searches with
    (`search_vector_text`), and makes at most one embedding call otherwise.
    Raises InvalidInput for an unknown mode/source and ProviderError when the query cannot be
    embedded (semantic and hybrid modes).
    """
    with ranking_with(config or ranking_config()):
        return _search(
            SearchState(
                user_id=user.pk,
                app_id=app_id,
                query=query,
                mode=mode,
                top_k=top_k,
                max_tokens=max_tokens,
                min_similarity=min_similarity,
                min_relevance=min_relevance,
                recency_half_life_days=recency_half_life_days,
                now=(as_of or timezone.now()).timestamp(),
                trim=trim,
                gists=gists,
            ),
            sources=sources,
            filters=filters or SearchFilters(),
            query_embedding=query_embedding,
            query_embedding_text=query_embedding_text,
            stage_clock=stage_clock,
        )


def _search(
    state: SearchState,
    *,
    sources,
    filters: SearchFilters,
    query_embedding: list[float] | None,
    query_embedding_text: str | None,
    stage_clock: Callable[[], float | None] | None,
) -> SearchResult:
    """The query scoped and embedded, then six stages in order over one `SearchState`:

    candidates -> fuse -> rerank -> floor -> pack -> trim

    The first five read the database inside one transaction; trim is display only.
    """
    _check_arguments(mode=state.mode, sources=sources, top_k=state.top_k)
    started = time.perf_counter()
    _scope(state, sources=sources, filters=filters)
    # Before the transaction: a model that fails fails the search, not the caller's one.
    _embed(state, given=query_embedding, given_text=query_embedding_text)
    stages = _StageTimes(stage_clock)
    # SET LOCAL needs a transaction; inside the caller's (the context pack's build) no
    # savepoint is taken: a failed search fails the caller's transaction, as the pack wants.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        for name, stage in (
            ("candidates", stage_candidates),
            ("fuse", stage_fuse),
            ("rerank", stage_rerank),
            ("floor", stage_floor),
            ("pack", stage_pack),
        ):
            stage(state, cursor)
            stages.mark(name)
    stage_trim(state)
    stages.mark("trim")
    search_ms = (time.perf_counter() - started) * 1000 - state.embed_ms
    metrics.SEARCH_SECONDS.labels(state.mode).observe(search_ms / 1000)
    if state.embed_ms:
        metrics.SEARCH_EMBEDDING_SECONDS.observe(state.embed_ms / 1000)
    return SearchResult(
        items=state.hits,
        total_tokens_used=state.used,
        query_embedding_ms=round(state.embed_ms, 2),
        search_ms=round(search_ms, 2),
        entities=state.query_entities,
        stage_ms=stages.elapsed,
    )


def _scope(state: SearchState, *, sources, filters: SearchFilters) -> None:
    """The caller's scope as SQL (user, app, sources, filters, a quoted phrase the query
    requires), the candidates per leg, and the conversation's speakers the query names."""
    state.scope, state.params = search_scope.scope_sql(
        user_id=state.user_id, app_id=state.app_id, sources=sources, filters=filters
    )
    phrase = search_candidates.phrase_filter(state.query)
    if phrase:
        state.scope += " AND search_vector @@ websearch_to_tsquery('english', %(s_phrase)s)"
        state.params["s_phrase"] = fold_accents(phrase)
    config = ranking_config()
    state.limit = max(
        config.semantic_min_candidates if state.mode == "semantic" else config.candidates_per_side,
        state.top_k * 3,
    )
    if state.mode in ("hybrid", "keyword") and state.query.strip():
        state.stats, state.named = scope_speakers_named(state.scope, state.params, state.query)
    elif state.mode == "semantic":
        # The vector leg's path depends on the scope's size (see vector_statements); no
        # speakers are named, so the query is embedded whole.
        with connection.cursor() as cursor:
            state.stats = search_scope.scope_stats(cursor, scope=state.scope, params=state.params)


def _embed(state: SearchState, *, given, given_text) -> None:
    """The query's vector (one model call at most; none when the caller embedded the text the
    vector leg searches with)."""
    if state.mode not in ("hybrid", "semantic"):
        return
    if state.mode == "hybrid" and given is None and not embedder_available():
        # No embedder on this install (no graphs, no torch to export them): a hybrid search
        # is its keyword side, as the context pack's is when a query vector is not ready.
        state.mode = "keyword"
        return
    embedding, state.embed_ms = query_vector(
        query=state.query,
        named=state.named,
        mode=state.mode,
        given=given,
        given_text=given_text,
    )
    state.vector = vector_literal(embedding)


def keyword_dropped_words(state: SearchState) -> str:
    """The words the keyword leg leaves out of the query unless nothing else would be left:
    the speakers it names (each message's header and text hold its speaker: every message of
    the conversation is "about" its participants) and the year most of the scope was said in
    (each item's header holds its date). Such a word matches most items and tells none apart,
    at the cost of scoring every one of them."""
    config = ranking_config()
    if config.keyword_drops_every_named_speaker:
        words = list(state.named)
    else:
        words = [state.named[0]] if len(state.named) == 1 else []
    if config.keyword_drops_common_year and state.stats and state.stats.common_year:
        words.append(state.stats.common_year)
    return " ".join(words)


def stage_candidates(state: SearchState, cursor) -> None:
    """The three legs' ids with their scores, each at most `limit`, all inside the scope:
    keyword (BM25 without the words most items hold: `keyword_dropped_words`), entity (items
    naming what the query names) and vector (cosine over HNSW or an exact sort), in two round
    trips: the query's lexemes with the vector index's settings, then the legs (one without a
    keyword side; a scope too big for one BM25 statement adds its own two)."""
    scope_items = state.stats.count if state.stats else None
    first: dict[str, search_candidates.Statement] = {}
    legs: dict[str, search_candidates.Statement] = {}
    if state.stats is not None and state.mode != "semantic":
        first["lexemes"] = search_candidates.query_lexemes_statement(
            query=trust.keyword_query(state.asked), dropped_words=keyword_dropped_words(state)
        )
    if state.vector:
        settings, legs["vector"] = search_candidates.vector_statements(
            cursor,
            scope=state.scope,
            params=state.params,
            vector=state.vector,
            limit=state.limit,
            scope_items=scope_items,
        )
        # The settings must run first: with the lexemes, or ahead of the legs.
        if first:
            first["vector settings"] = settings
        else:
            legs = {"vector settings": settings, **legs}
    lexemes = search_candidates.statements_run(cursor, list(first.values()))[0] if first else []
    if lexemes:
        keyword = {
            "scope": state.scope,
            "params": state.params,
            "lexemes": lexemes,
            "stats": state.stats,
            "limit": state.limit,
        }
        keyword_leg = search_candidates.bm25_statement(**keyword)
        if keyword_leg is None:  # a big scope: its own sampled statements
            state.keyword_rows = search_candidates.bm25_big_scope(cursor, **keyword)
        else:
            legs["keyword"] = keyword_leg
    if state.mode == "hybrid" and ranking_config().entity_weight and state.query.strip():
        leg = entity_leg_statement(
            user_id=state.user_id,
            app_id=state.app_id,
            query=state.query,
            exclude_names=state.named,
            scope=state.scope,
            params=state.params,
            scope_items=scope_items,
            limit=state.limit,
        )
        if leg is not None:
            legs["entity"] = leg
    found = dict(
        zip(legs, search_candidates.statements_run(cursor, list(legs.values())), strict=True)
    )
    if "keyword" in found:
        state.keyword_rows = found["keyword"]
    if "entity" in found:
        state.query_entities, state.entity_rows = found["entity"]
    if "vector" in found:
        state.vector_rows = found["vector"]


def stage_fuse(state: SearchState, cursor) -> None:
    """One score per candidate (weighted reciprocal rank fusion in hybrid mode, the leg's own
    score otherwise); the best `loaded_candidates` loaded with what ranking needs, each with
    its relevance in [0, 1]."""
    config = ranking_config()
    if state.mode == "hybrid":
        fused = rrf(state.keyword_rows, config.keyword_weight)
        for rows, weight in (
            (state.vector_rows, config.vector_weight),
            (state.entity_rows, config.entity_weight),
        ):
            for item_id, value in rrf(rows, weight).items():
                fused[item_id] = fused.get(item_id, 0.0) + value
    elif state.mode == "keyword":
        fused = dict(state.keyword_rows)
    else:
        fused = dict(state.vector_rows)
    state.fused = fused
    state.names = trust.query_names(state.asked)
    state.candidates = search_candidates.candidates_load(
        cursor,
        sorted(fused, key=fused.__getitem__, reverse=True)[: config.loaded_candidates],
        state.vector,
        dict(state.vector_rows),
        # Only the fused modes weigh covered pairs (see rank_candidates).
        probe_covered_pairs=config.pair_weight != 1.0 and state.mode != "semantic",
        names=state.names,
        scope=state.scope,
        params=state.params,
        names_found=state.names_found,
    )
    # The trust rules read the texts loaded with the candidates: no stage reads a row again.
    state.texts.update((item_id, (c.content, c.source)) for item_id, c in state.candidates.items())
    keyword_scores = dict(state.keyword_rows)
    entity_ranks = {item_id: rank for rank, (item_id, _) in enumerate(state.entity_rows, 1)}
    entity_scores = dict(state.entity_rows)
    for item_id, candidate in state.candidates.items():
        candidate.score = fused[item_id]
        candidate.keyword_score = keyword_scores.get(item_id)
        candidate.entity_rank = entity_ranks.get(item_id)
        candidate.entity_score = entity_scores.get(item_id)
    trust.relevance_assign(
        state.candidates, keyword_rows=state.keyword_rows, vector_rows=state.vector_rows
    )


def stage_rerank(state: SearchState, cursor) -> None:
    """The candidates in rank order by the trust rules: the assistant's words below the
    user's for questions about the user, factors and recency (`rank_candidates`), amounts for
    money questions, reports of things done for when/order questions, the share of the
    query's words held, names the memory never mentions, and the statements of a relation
    the question asks about, all on the texts loaded with the candidates."""
    config = ranking_config()
    trust.assistant_weight_apply(state.candidates, state.query)
    ranked = rank_candidates(
        state.candidates,
        mode=state.mode,
        named=state.named,
        min_similarity=state.min_similarity,
        recency_half_life_days=state.recency_half_life_days,
        now=state.now,
    )
    ranked = trust.money_weight_apply(ranked, state.asked, state.texts)
    ranked = trust.event_weight_apply(ranked, state.asked, state.texts)
    trust.coverage_assign(ranked, state.asked, state.texts)
    if state.names and ranked:
        trust.missing_names_apply(
            state.candidates,
            trust.names_missing(
                cursor,
                scope=state.scope,
                params=state.params,
                names=state.names,
                found=state.names_found,
            ),
        )
    state.relation = question_relation(state.asked)
    state.updates = trust.window_updates(
        [c.id for c in ranked[: config.supersede_window]],
        stated=state.stated,
        texts=state.texts,
        relation=state.relation,
    )
    trust.relation_relevance_apply(ranked, state.query, state.stated)
    state.ranked = ranked


def stage_floor(state: SearchState, cursor) -> None:
    """Nothing when the best candidate is under the relevance floor (nothing the query asks
    about was discussed), else the candidates above the item floor. Keyword mode has no
    floor: every item it returns holds words of the query."""
    if state.mode == "keyword":
        return
    floor = ranking_config().relevance_floor if state.min_relevance is None else state.min_relevance
    state.ranked = trust.relevance_floor_apply(
        state.ranked,
        floor=floor,
        updates=state.updates,
        about_user=trust.asks_about_users_world(state.query, state.names),
        query=state.asked,
        texts=state.texts,
    )


def stage_pack(state: SearchState, cursor) -> None:
    """At most `top_k` results, one slot per exchange (counting questions: each chat's best
    first), newer over older among the first ones (the older marked superseded), loaded."""
    config = ranking_config()
    ranked = (
        trust.aggregate_order(state.ranked)
        if trust.is_aggregate_query(state.query)
        else state.ranked
    )
    packed = pack_slots(ranked, top_k=state.top_k)
    window = [c.id for c in packed[: config.supersede_window]]
    state.packed, state.superseded = trust.supersede_order(
        packed,
        trust.pairwise_similarity(cursor, window),
        as_of=state.now,
        updates=trust.window_updates(
            window, stated=state.stated, texts=state.texts, relation=state.relation
        ),
    )
    state.hits = hits_build(state.packed)


def stage_trim(state: SearchState) -> None:
    """Display only: long items cut to the passage that matches, chat turns to what they
    tell, lower results to their gist (unless `trim`/`gists` say no), within `max_tokens`;
    superseded results say by what and when."""
    if state.trim:
        display.hits_trim(state.hits, state.query, gists=state.gists)
    state.hits, state.used = display.hits_budget(state.hits, max_tokens=state.max_tokens)
    display.superseded_mark(
        state.hits,
        state.superseded,
        {c.id: c.occurred_at for c in state.packed},
    )


def search_entities(
    *, user, result: SearchResult, app_id: str, limit: int = 8, buckets: list[str] | None = None
) -> list:
    """The entities worth showing beside a result: those the query names, then those its
    items name (most mentioned first), each once. With ``buckets``, an entity the query names
    is shown only when one of its mentions is in those buckets (the items already are)."""
    named = result.entities[:limit]
    if buckets and named:
        in_buckets = entities_mentioned_in_buckets(
            user_id=user.pk, entity_ids=[entity.id for entity in named], buckets=buckets
        )
        named = [entity for entity in named if entity.id in in_buckets]
    chosen = {entity.id: entity for entity in named}
    if len(chosen) < limit:
        for entity in entities_of_items(
            user_id=user.pk, item_ids=[hit.id for hit in result.items], limit=limit
        ):
            chosen.setdefault(entity.id, entity)
    return list(chosen.values())[:limit]
