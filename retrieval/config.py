"""Every tuning setting of the search, as data: one frozen, typed `RankingConfig`.

`memory_search(config=...)` runs with the config it is given (default `RANKING`); the stages
read it through `ranking_config()`, so a benchmark or a test compares settings by building
configs (`RANKING.replace(vector_weight=0.5)`), never by patching modules. Each field says why
it has its value and which dev figure chose it (bench/locomo.py on LoCoMo dev and LongMemEval
dev; the dated measurements are in bench/RESULTS.md).
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


def _setting(default, why: str, chosen_by: str = ""):
    return field(default=default, metadata={"why": why, "chosen_by": chosen_by})


@dataclass(frozen=True)
class RankingConfig:
    # --- candidates: the legs' SQL ------------------------------------------------------------
    candidates_per_side: int = _setting(
        40,
        "Candidates each leg (keyword, vector) returns before fusion: every one is SQL work.",
        "LoCoMo, LongMemEval and long-chat dev the same from 100 (0.823, 0.870, 0.819)",
    )
    loaded_candidates: int = _setting(
        60,
        "Best fused candidates loaded for ranking (each a row read).",
        "LoCoMo, LongMemEval and long-chat dev the same from 150 and from 250",
    )
    semantic_min_candidates: int = _setting(
        50, "Semantic mode ranks by similarity alone: three per slot, at least this many."
    )
    bm25_k1: float = _setting(1.2, "BM25 term-frequency saturation.", "the usual value")
    bm25_b: float = _setting(0.75, "BM25 length normalisation.", "the usual value")
    context_tf_weight: float = _setting(
        0.5,
        "A word in an item's keyword context (its neighbours) counts at this share of tf.",
    )
    max_query_terms: int = _setting(32, "Query words the keyword leg searches at most.")
    max_keyword_query_chars: int = _setting(
        4000, "A longer query (a pasted document) is read by the keyword side up to here."
    )
    single_statement_items: int = _setting(
        2000,
        "Scopes up to this many items are scored exactly in one statement; bigger ones "
        "estimate how common each query word is from a sample.",
    )
    speaker_list_max: int = _setting(
        200, "A scope's distinct speakers are listed up to this many (more: not speakers)."
    )
    df_sample_items: int = _setting(
        300, "Rows a big scope samples to estimate how common a query word is."
    )
    prune_df: int = _setting(
        1000, "A word in more of a big scope's items than this is too common to search by."
    )
    big_scope_candidates: int = _setting(
        3000, "Rows a big scope's keyword leg reads before it ranks them."
    )
    gin_global_rows: int = _setting(
        20000, "A word matching more rows table-wide is never looked up through the GIN index."
    )
    gin_row_cost: float = _setting(
        0.02,
        "Cost of one GIN posting-list entry, in scope rows read.",
        "15,000 rows table-wide took 11 ms where its scope's 500 took 2",
    )
    entity_query_entities: int = _setting(
        10, "The entity leg follows at most this many of the entities a query names."
    )
    entity_max_mention_share: float = _setting(
        0.2, "An entity named in more of the scope's items than this share pulls in none."
    )
    entity_mentions_per_entity: int = _setting(
        100, "The entity leg reads at most this many of an entity's newest mentions."
    )
    vector_index_min_items: int = _setting(
        5000,
        "Scopes from this many items may be kept on the HNSW index; smaller ones sort exactly.",
    )
    question_max_chars: int = _setting(
        200, 'A message item shorter than this that ends with "?" counts as a question.'
    )
    # --- fuse: reciprocal rank fusion and its factors ------------------------------------------
    rrf_k: int = _setting(20, "Reciprocal rank fusion constant.")
    keyword_weight: float = _setting(1.0, "Weight of the keyword leg in fusion.")
    vector_weight: float = _setting(
        0.7,
        "Weight of the vector leg (the local embedder is weaker than BM25 on conversations).",
        "LoCoMo: 0.6-0.8 a plateau; equal weights lose a point, 0.3 loses one too",
    )
    entity_weight: float = _setting(
        0.4,
        "Weight of the entity leg (items naming an entity the query names).",
        "LoCoMo dev 0.774 (0.2: 0.776), LongMemEval dev 0.787 (0.2: 0.759): 0.4 holds on both",
    )
    neighbour_weight: float = _setting(
        0.3, "Share of a neighbour message's score an item gets (the answer next to a question)."
    )
    speaker_boost: float = _setting(
        2.0,
        "Factor of items said by the one speaker a query names.",
        "LoCoMo dev: 1.5 -> 2.0 is 0.789 -> 0.792, multi-hop +1 point",
    )
    vector_without_name: bool = _setting(
        True,
        "The vector leg searches without the one speaker a query names (half the messages "
        "hold the name).",
    )
    pair_weight: float = _setting(
        0.5,
        "Factor of a turn-pair chunk whose messages are also items (it repeats them).",
        "LoCoMo: 1, 0.5, 0.25 and 0 within 0.1 point",
    )
    summary_weight: float = _setting(
        0.5,
        "Factor of session summaries (long; cover no single message).",
        "LoCoMo dev +0.5 point",
    )
    keyword_drops_common_year: bool = _setting(
        True,
        "The keyword leg leaves out the year most of a small scope was said in (its items' "
        "headers hold it: it tells none apart and makes the leg score nearly every item).",
        "LoCoMo dev, year questions: search CPU mean 22.2 -> 17.2 ms, recall unchanged on the "
        "three dev sets",
    )
    keyword_drops_every_named_speaker: bool = _setting(
        True,
        "Every speaker the query names leaves the keyword query, not only a lone one.",
        "LoCoMo dev with the year dropped: search CPU p95 21.1 -> 19.8 ms, @10 0.800 -> 0.803",
    )
    # --- rerank: the trust rules -------------------------------------------------------------
    vector_zero: float = _setting(
        0.2, "Cosine similarity that maps to relevance 0 (unrelated sentences sit at 0.0-0.3)."
    )
    vector_one: float = _setting(0.7, "Cosine similarity that maps to relevance 1 (a paraphrase).")
    keyword_half: float = _setting(
        12.0, "BM25 score at relevance 0.5 (one rare query word scores ~5-8)."
    )
    coverage_window: int = _setting(
        10, "The first candidates whose keyword relevance also counts the query's words held."
    )
    coverage_weight: float = _setting(1.0, "Weight of that share of the query's words.")
    keyword_relevance_full_coverage: float = _setting(
        0.34,
        "For the query floor, a candidate's BM25 relevance counts in full only when its text "
        "holds this share of the query's words, in proportion under it (0: always in full).",
        "long-chat dev unrelated empty 0.792 -> 0.833, LongMemEval dev 0.222 -> 0.333, LoCoMo "
        "dev 0.945 -> 0.946; recall and LoCoMo's top 10 unchanged",
    )
    keyword_relevance_min_terms: int = _setting(
        2,
        "...for a query of at least this many words that are not stop words.",
        "1 emptied a one-word question's own answer on long-chat dev (a stop word matched)",
    )
    keyword_relevance_max_terms: int = _setting(
        6,
        "...and at most this many: a chat message one rare word of which a memory holds is "
        "about that memory.",
        "without it LoCoMo dev's first messages of a chat with memories 0.960 -> 0.940",
    )
    missing_name_factor: float = _setting(
        0.5, "Relevance factor per name in the query the user's memory never mentions."
    )
    question_weight: float = _setting(
        0.6, "Factor of a short message that only asks (its answer ranks above it)."
    )
    assistant_weight: float = _setting(
        0.5, "Factor of the assistant's words when the query asks about the user's own life."
    )
    supersede_window: int = _setting(8, "Newer beats older among the first results.")
    supersede_similarity: float = _setting(
        0.9,
        "Embedding similarity at which two items a day apart speak of the same thing.",
        "LoCoMo dev: 0.7 cost 1.2 points, 0.8 cost 0.8; 0.9 +0.3 over 0.8",
    )
    update_min_gap_seconds: int = _setting(
        1, "How much later a stated new value must be said to replace the old one."
    )
    aggregate_window: int = _setting(
        20, "Counting and list questions: the best item of each chat first, among these."
    )
    money_window: int = _setting(20, "Results an amount-of-money question reorders.")
    money_weight: float = _setting(
        1.5,
        "Factor of items stating an amount, for a question about money.",
        "LongMemEval dev 0.843 -> 0.870; LoCoMo dev unchanged",
    )
    event_window: int = _setting(20, "Results a when-or-in-what-order question reorders.")
    event_weight: float = _setting(
        2.0,
        "Factor of items whose speaker reports something done, for a when/order question.",
        "long-chat dev (chat path) order 0.111 -> 0.333; LoCoMo, LongMemEval dev unchanged",
    )
    # --- floor ------------------------------------------------------------------------------
    relevance_floor: float = _setting(
        0.3,
        "A query whose best candidate is below this returns nothing.",
        "LoCoMo dev: empties 94-96% of unrelated queries for 0.4 points of recall",
    )
    support_relevance_floor: float = _setting(
        0.6,
        "A question about the user's own life passes the floor on an assistant's turn only "
        "over this (on anything else over `relevance_floor`); `relevance_floor` turns it off.",
        "long-chat dev unrelated empty 0.583 -> 0.708 (0.5-0.8 the same); LoCoMo, "
        "LongMemEval dev unchanged",
    )
    support_floor_unnamed: bool = _setting(
        True,
        "A query that names no one and does not ask what the assistant said holds the "
        "assistant's words to that floor too.",
        "long-chat dev unrelated empty 0.750 -> 0.792, LoCoMo dev 0.942 -> 0.945; recall "
        "unchanged on the three dev sets",
    )
    floor_reads_users_turn_alone: bool = _setting(
        True,
        "An exchange stored with its reply passes that floor on its user turn; its reply's "
        "words are the assistant's.",
        "long-chat dev unrelated empty 0.708 -> 0.750; LoCoMo, LongMemEval dev unchanged",
    )
    item_relevance_floor: float = _setting(
        0.2,
        "Below the query floor, items under this are dropped.",
        "LoCoMo dev +0.5 point over 0.3 at the same unrelated_empty_rate",
    )
    # --- pack: one slot per exchange ---------------------------------------------------------
    collapse_on_overlap: bool = _setting(
        True, "An item whose messages overlap an item already taken is skipped."
    )
    exchange_collapse: bool = _setting(True, "One slot per exchange (items of one exchange_key).")
    merge_turns: bool = _setting(True, "The second turn of an exchange joins the first one's slot.")
    # --- trim: display only -----------------------------------------------------------------
    trim_min_chars: int = _setting(
        700, "Items longer than this are cut to the sentences around their best match."
    )
    trim_chars: int = _setting(450, "About how long such a cut is.")
    chatter_trim: bool = _setting(
        True,
        "A short chat turn loses the reactions around what it tells.",
        "LoCoMo dev 0.798 -> 0.799, more answer words in the budget",
    )
    asks_trim: bool = _setting(
        True, "The trim also drops the questions to the other person at the turn's edges."
    )
    whole_results: int = _setting(
        3,
        "Results shown whole before the rest are cut to their gist.",
        "LoCoMo dev 0.803 -> 0.813, LongMemEval dev 0.870 -> 0.889",
    )
    gist_chars: int = _setting(120, "About how long a gist is.")

    def __post_init__(self) -> None:
        # BM25's saturation divides each term's tf by (tf + k1 x length norm): 0 would divide
        # 0 by 0 for every term an item lacks.
        if self.bm25_k1 <= 0:
            raise ValueError(f"bm25_k1 must be above 0, got {self.bm25_k1}")

    def replace(self, **changes) -> RankingConfig:
        """A copy with `changes` (names are the fields; upper case is accepted too)."""
        return dataclasses.replace(self, **{name.lower(): value for name, value in changes.items()})


RANKING = RankingConfig()

_ACTIVE: contextvars.ContextVar[RankingConfig] = contextvars.ContextVar("ranking", default=RANKING)


def ranking_config() -> RankingConfig:
    """The config of the search running in this context (RANKING outside one)."""
    return _ACTIVE.get()


@contextmanager
def ranking_with(config: RankingConfig) -> Iterator[RankingConfig]:
    """Run the enclosed search with `config`."""
    token = _ACTIVE.set(config)
    try:
        yield config
    finally:
        _ACTIVE.reset(token)
