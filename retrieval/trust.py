"""The rerank stage's rules, applied after fusion so a user can trust the results: a
relevance floor, one slot per exchange, questions below the statements that answer them, newer
over older, pieces of a multi-session answer together. (Cutting long items to the passage that
matches is display: `retrieval.display`.)

Pure functions over the fused candidates and the hits' text (one SQL helper reads the
pairwise similarity of the top items). Constants were calibrated with bench/locomo.py on
locomo-dev.json and longmemeval-dev.json; each change was kept only when it held on both.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from mnemo_text.accents import fold_accents
from mnemo_text.entity_names import ABBREVIATIONS, NATIONALITIES
from mnemo_text.events import asks_when_or_order, reports_something_done
from mnemo_text.exchanges import users_words
from mnemo_text.fact_updates import (
    RELATION_TERMS,
    question_relation,
    statements_replaced,
    user_statements,
)
from mnemo_text.words import ENGLISH_STOP_WORDS
from retrieval import candidates as search_candidates
from retrieval.candidates import Candidate
from retrieval.config import ranking_config

_NAME = re.compile(r"\b([A-Z][a-zA-Z]+)(?:'s|’s)?\b")
_NOT_NAMES = frozenset(
    """i i'm i've i'd what when where who whom whose why how which did do does is are was were
    can could would should will have has had am be the a an my our your any some tell remind
    please ok okay hi hey thanks monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec""".split()
) | {abbreviation.lower() for abbreviation in ABBREVIATIONS}
AGGREGATE_QUERY = re.compile(
    r"\b(how many|how much|in total|total|which of my|list|all (?:the|my)|times|number of)\b",
    re.IGNORECASE,
)
MONEY_QUERY = re.compile(
    r"\b(how much|money|spend|spent|cost|costs|price|paid|pay|budget|afford)\b", re.IGNORECASE
)
_AMOUNT = re.compile(
    r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(?:dollars|euros|pounds|bucks|usd|eur|gbp)\b", re.IGNORECASE
)
ELLIPSIS = "…"

_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=8192)
def match_terms(text: str) -> frozenset[str]:
    """The query-matching words of `text`: accents folded, the first six letters of each.
    Cached by text: a search asks it of the query once per hit and of the same stored texts
    search after search."""
    folded = fold_accents(text.lower())
    return frozenset(word[:6] for word in _WORD.findall(folded) if word not in ENGLISH_STOP_WORDS)


# --------------------------------------------------------------------------------------------
# Relevance and the floor
# --------------------------------------------------------------------------------------------


def vector_relevance(candidate: Candidate) -> float:
    """Its cosine similarity mapped onto VECTOR_ZERO..VECTOR_ONE (unbounded; 0 without one)."""
    config = ranking_config()
    if candidate.similarity is None:
        return 0.0
    return (candidate.similarity - config.vector_zero) / (config.vector_one - config.vector_zero)


def keyword_relevance(candidate: Candidate) -> float:
    """Its BM25 score mapped onto [0, 1): KEYWORD_HALF scores 0.5 (0 without one)."""
    if not candidate.keyword_score:
        return 0.0
    return candidate.keyword_score / (candidate.keyword_score + ranking_config().keyword_half)


def relevance_of(candidate: Candidate) -> float:
    return min(1.0, max(0.0, vector_relevance(candidate), keyword_relevance(candidate)))


def coverage_of(query_terms: dict[str, float], text: str) -> float:
    """The share of the query's words (weighted by length: long words say more) in `text`."""
    total = sum(query_terms.values())
    if not total:
        return 0.0
    held = match_terms(text)
    return sum(weight for term, weight in query_terms.items() if term in held) / total


def query_terms(query: str) -> dict[str, float]:
    return {term: 1.0 + math.log(len(term)) for term in match_terms(query)}


def coverage_assign(ranked: list[Candidate], query: str, texts: dict[int, tuple[str, str]]) -> None:
    """Keyword relevance of the first COVERAGE_WINDOW candidates: the share of the query's
    words their text holds (a BM25 score depends on the scope's size and the item's length;
    coverage means the same in every scope). For a question of KEYWORD_RELEVANCE_MIN_TERMS to
    KEYWORD_RELEVANCE_MAX_TERMS words, also each candidate's `floor_relevance`, what the query
    floor reads: its BM25 relevance counts in full only when its text holds
    KEYWORD_RELEVANCE_FULL_COVERAGE of the question's words ("Which spelling and answer length
    did I ask you to use?" is not answered on "ask"); ranking and the item floor keep the full
    score. `texts`: the loaded candidates' {id: (text, source)}."""
    config = ranking_config()
    terms = query_terms(query)
    if not terms:
        return
    share = config.keyword_relevance_full_coverage
    if not config.keyword_relevance_min_terms <= len(terms) <= config.keyword_relevance_max_terms:
        share = 0.0
    for index, candidate in enumerate(ranked):
        if index >= config.coverage_window and not share:
            break
        coverage = coverage_of(terms, texts.get(candidate.id, ("", ""))[0])
        held = config.coverage_weight * coverage if index < config.coverage_window else 0.0
        if share:
            scaled = keyword_relevance(candidate) * min(1.0, coverage / share)
            candidate.floor_relevance = min(
                1.0, max(0.0, vector_relevance(candidate), scaled, held)
            )
        candidate.relevance = min(1.0, max(candidate.relevance, held))


def relevance_assign(
    candidates: dict[int, Candidate],
    *,
    keyword_rows: list[tuple[int, float]],
    vector_rows: list[tuple[int, float]],
) -> None:
    """Sets each candidate's leg ranks (1-based) and relevance."""
    keyword_ranks = {item_id: rank for rank, (item_id, _) in enumerate(keyword_rows, 1)}
    vector_ranks = {item_id: rank for rank, (item_id, _) in enumerate(vector_rows, 1)}
    for item_id, candidate in candidates.items():
        candidate.keyword_rank = keyword_ranks.get(item_id)
        candidate.vector_rank = vector_ranks.get(item_id)
        candidate.relevance = relevance_of(candidate)


_TITLE_BEFORE = re.compile(rf"(?<!\w)(?:{'|'.join(ABBREVIATIONS)})\.$")


def query_names(query: str) -> list[str]:
    """Capitalised words of the query that are not its first word, a question word, a
    weekday, a month, a title or a nationality: the names it asks about ("Dr. Patel": Patel).
    "What European countries has Maria been to?" asks about Spain and England, which never
    say "European"."""
    names = []
    for match in _NAME.finditer(query):
        word = match.group(1)
        before = query[: match.start()].rstrip()
        after_title = _TITLE_BEFORE.search(before)
        if not before or (before[-1] in ".!?:\n\"'(" and not after_title):
            continue
        lowered = word.lower()
        if (
            lowered in _NOT_NAMES
            or lowered in NATIONALITIES
            or lowered in [n.lower() for n in names]
        ):
            continue
        names.append(word)
    return names[:5]


def names_missing(
    cursor, *, scope: str, params: dict, names: list[str], found: set[str] = frozenset()
) -> list[str]:
    """The names no item of the scope mentions (one statement, a GIN lookup per name); those
    in `found` (held by a candidate, search_candidates.candidates_load) are not looked up."""
    names_left = [name for name in names if name not in found]
    if not names_left:
        return []
    checks = ", ".join(
        f"""EXISTS (SELECT 1 FROM rag_store WHERE {scope}
               AND search_vector @@ plainto_tsquery('english', %(q_name{index})s))"""
        for index in range(len(names_left))
    )
    cursor.execute(
        f"SELECT {checks}",
        {
            **params,
            **{f"q_name{index}": fold_accents(name) for index, name in enumerate(names_left)},
        },
    )
    present = cursor.fetchone()
    return [name for name, held in zip(names_left, present, strict=True) if not held]


def missing_names_apply(candidates: dict[int, Candidate], missing: list[str]) -> None:
    if not missing:
        return
    factor = ranking_config().missing_name_factor ** len(missing)
    for candidate in candidates.values():
        candidate.relevance *= factor
        if candidate.floor_relevance is not None:
            candidate.floor_relevance *= factor


_ABOUT_USER = re.compile(r"\b(?:i|my|me|mine|i'm|i've|i'd)\b", re.IGNORECASE)
# "we", "our", "us": the user's project in a working chat ("how often does our pipeline run?");
# lower case "us" only, so "the US" is not the user.
_ABOUT_USERS_WORK = re.compile(r"\b(?:[Ww]e|[Oo]urs?|us|[Ww]e're|[Ww]e've)\b")
_ABOUT_ASSISTANT = re.compile(
    r"\byou (?:said|told|mentioned|recommended|suggested|gave|provided|listed|wrote|explained|"
    r"described|shared|named|called)\b|\b(?:did|do|have|had) you (?:say|tell|mention|"
    r"recommend|suggest|give|provide|list|write|explain|describe|share|name|call)\b|"
    r"\b(?:our|the|that) (?:previous |last |earlier )?"
    r"(?:conversation|chat|discussion)\b|\bremind me\b",
    re.IGNORECASE,
)


def is_assistants_words(candidate: Candidate) -> bool:
    """An assistant's turn or a passage of one (the message indexer and the importers write
    the role), or an exchange whose turns are items of their own (what it adds to the user's
    turn is the reply); everything else is the user's or about the user: their turns,
    facts, documents, session summaries."""
    return candidate.role == "assistant" or candidate.is_covered_pair


def asks_about_user(query: str, *, or_their_work: bool = False) -> bool:
    """The query asks about the user's own life ("my", "I"; with `or_their_work` also "we",
    "our") and not about what the assistant said ("what did you recommend"): the user's
    words answer it."""
    about = _ABOUT_USER.search(query) or (or_their_work and _ABOUT_USERS_WORK.search(query))
    return bool(about) and not _ABOUT_ASSISTANT.search(query)


def own_words_relevance(candidate: Candidate, terms: dict[str, float], users_text: str) -> float:
    """The relevance of an exchange's user turn alone (`users_text`), for an exchange stored
    with its reply (an imported turn pair: "**User:** ... **Assistant:** ..."): its vector
    (the importer embeds the user's turn: `ingestion_app.chunking.conversations`) or the share
    of the query's words the user's turn holds. The keyword score is left out: it counts the
    reply's words."""
    coverage = coverage_of(terms, users_text) if terms else 0.0
    weighted = ranking_config().coverage_weight * coverage
    return min(1.0, max(0.0, vector_relevance(candidate), weighted))


def asks_about_users_world(query: str, names: list[str]) -> bool:
    """The query asks about the user's own life or work (`asks_about_user`), or names no one
    (`query_names`) and does not ask what the assistant said: asked of a user's memory, "How
    often does the pipeline run now?" is about their pipeline. With SUPPORT_FLOOR_UNNAMED off,
    only the first."""
    if asks_about_user(query, or_their_work=True):
        return True
    return (
        ranking_config().support_floor_unnamed and not names and not _ABOUT_ASSISTANT.search(query)
    )


def query_passes_floor(
    ranked: list[Candidate],
    *,
    floor: float,
    about_user: bool,
    query: str = "",
    texts: dict[int, tuple[str, str]] | None = None,
) -> bool:
    """Some candidate is at least `floor` relevant. For a question about the user's own life
    the assistant's words must reach SUPPORT_RELEVANCE_FLOOR: in a working chat every scope
    holds thousands of reply passages on the same techniques, and one of them is always
    somewhat like a question another user's memory cannot answer. The same holds for the
    reply inside an exchange stored whole (with `query` and the loaded `texts`): the exchange
    passes on its user turn at `floor` (`own_words_relevance`), on the whole at the support
    floor. A caller's floor under RELEVANCE_FLOOR asks for more than the default, and the
    assistant's words get it too."""
    config = ranking_config()
    support_floor = floor
    if about_user and floor >= config.relevance_floor:
        support_floor = max(floor, config.support_relevance_floor)
    own_words_only = (
        support_floor > floor and texts is not None and config.floor_reads_users_turn_alone
    )
    terms = query_terms(query) if own_words_only else {}
    for candidate in ranked:
        relevance = (
            candidate.relevance if candidate.floor_relevance is None else candidate.floor_relevance
        )
        if is_assistants_words(candidate):
            if relevance >= support_floor:
                return True
            continue
        if relevance < floor:
            continue
        if not own_words_only or relevance >= support_floor or candidate.states_asked_relation:
            return True  # (a stated value of the asked relation is the user's: `user_statements`)
        text = texts.get(candidate.id, ("", ""))[0]
        users_text = users_words(text)
        if (
            len(users_text) == len(text)
            or own_words_relevance(candidate, terms, users_text) >= floor
        ):
            return True
    return False


def relevance_floor_apply(
    ranked: list[Candidate],
    *,
    floor: float | None,
    updates: set[tuple[int, int]] = frozenset(),
    about_user: bool = False,
    query: str = "",
    texts: dict[int, tuple[str, str]] | None = None,
) -> list[Candidate]:
    """[] when no candidate passes the query floor (`query_passes_floor`); else the items over
    the item floor, and those under it that state a new (or the old) value of what a kept
    item states: the change of a fact is relevant wherever the fact is ("I just moved to
    Denver" for "where do I live?")."""
    if floor is None or not ranked:
        return ranked
    if not query_passes_floor(ranked, floor=floor, about_user=about_user, query=query, texts=texts):
        return []
    item_floor = min(floor, ranking_config().item_relevance_floor)
    kept = {candidate.id for candidate in ranked if candidate.relevance >= item_floor}
    for a, b in updates:
        if a in kept or b in kept:
            kept |= {a, b}
    return [candidate for candidate in ranked if candidate.id in kept]


def relation_relevance_apply(ranked: list[Candidate], query: str, stated: dict[int, tuple]) -> None:
    """A first-person question about a single-valued relation ("where am I living?") is
    answered by the items that state a value of it ("I moved to Denver"), which share no word
    with it and embed far from it: each such item of `stated` (its parsed user statements,
    `window_updates`) is at least RELEVANCE_FLOOR relevant, so the floor keeps it."""
    relation = question_relation(query)
    if not relation:
        return
    for candidate in ranked:
        if any(fact.relation == relation for fact in stated.get(candidate.id, ())):
            floor = ranking_config().relevance_floor
            candidate.relevance = max(candidate.relevance, floor)
            if candidate.floor_relevance is not None:
                candidate.floor_relevance = max(candidate.floor_relevance, floor)
            candidate.states_asked_relation = True


def assistant_weight_apply(candidates: dict[int, Candidate], query: str) -> None:
    """The assistant's items weigh ASSISTANT_WEIGHT for a question about the user's life."""
    config = ranking_config()
    if config.assistant_weight == 1.0 or not asks_about_user(query):
        return
    for candidate in candidates.values():
        if candidate.speaker == "assistant":
            candidate.score *= config.assistant_weight


def question_weight_apply(candidates: dict[int, Candidate]) -> None:
    for candidate in candidates.values():
        if candidate.is_question:
            candidate.score *= ranking_config().question_weight


# --------------------------------------------------------------------------------------------
# Ordering: aggregation and supersession
# --------------------------------------------------------------------------------------------


def money_weight_apply(
    ranked: list[Candidate], query: str, texts: dict[int, tuple[str, str]]
) -> list[Candidate]:
    """For a question about an amount of money, the first MONEY_WINDOW items that state an
    amount weigh MONEY_WEIGHT (re-sorted as ``_rank`` sorts); others are left as they are."""
    config = ranking_config()
    if not MONEY_QUERY.search(query):
        return ranked
    window, rest = ranked[: config.money_window], ranked[config.money_window :]
    for candidate in window:
        if _AMOUNT.search(texts.get(candidate.id, ("", ""))[0]):
            candidate.score *= config.money_weight
    window.sort(key=lambda c: (-c.score, -(c.similarity or 0.0), -c.id))
    return window + rest


def event_weight_apply(
    ranked: list[Candidate], query: str, texts: dict[int, tuple[str, str]]
) -> list[Candidate]:
    """For a question about when, or in what order, someone did something, the first
    `event_window` items whose speaker's own words report something done
    (mnemo_text.events) weigh `event_weight` (re-sorted as ``_rank`` sorts): the question
    rarely shares its verb with the report, and the same things come up far more often in
    requests about them. The assistant's words are left as they are."""
    config = ranking_config()
    if config.event_weight == 1.0 or not asks_when_or_order(query):
        return ranked
    window, rest = ranked[: config.event_window], ranked[config.event_window :]
    for candidate in window:
        if candidate.role == "assistant":
            continue
        if reports_something_done(users_words(texts.get(candidate.id, ("", ""))[0])):
            candidate.score *= config.event_weight
    window.sort(key=lambda c: (-c.score, -(c.similarity or 0.0), -c.id))
    return window + rest


def is_aggregate_query(query: str) -> bool:
    return bool(AGGREGATE_QUERY.search(query))


def aggregate_order(ranked: list[Candidate]) -> list[Candidate]:
    """The first AGGREGATE_WINDOW items with the best of each chat first (rank order kept
    within each pass), so the pieces of a count or a list spread over chats come together."""
    config = ranking_config()
    window, rest = (
        ranked[: config.aggregate_window],
        ranked[config.aggregate_window :],
    )
    first, later, seen = [], [], set()
    for candidate in window:
        key = candidate.conversation or f"item-{candidate.id}"
        (later if key in seen else first).append(candidate)
        seen.add(key)
    return first + later + rest


def pairwise_similarity(cursor, ids: list[int]) -> dict[tuple[int, int], float]:
    """Cosine similarity of each pair of the given items' embeddings (a < b)."""
    if len(ids) < 2:
        return {}
    statement = search_candidates.Statement(
        """SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding)
           FROM rag_store AS a JOIN rag_store AS b ON a.id < b.id
           WHERE a.id = ANY(%(ids)s::bigint[]) AND b.id = ANY(%(ids)s::bigint[])
             AND a.embedding IS NOT NULL AND b.embedding IS NOT NULL""",
        {"ids": ids},
        lambda rows: {(row[0], row[1]): float(row[2]) for row in rows},
    )
    return search_candidates.statements_run(cursor, [statement])[0]


# Only the start of a long user message is read for statements (a pasted text states nothing
# about the user, and its parse would cost the search).
def window_updates(
    ids: list[int],
    *,
    stated: dict[int, tuple],
    texts: dict[int, tuple[str, str]],
    relation: str = "",
) -> set[tuple[int, int]]:
    """Pairs (a < b) of the given items where one gives a new value of what the other states
    (mnemo_text.fact_updates): "I live in Austin" / "I just moved to Denver" share few
    words and an embedding similarity far under SUPERSEDE_SIMILARITY. Every statement of the
    older must be replaced, or with `relation` (what the question asks: `question_relation`)
    every one of that relation: "I live in Austin and work at Globex" is not replaced by "I
    moved to Denver" for "where do I work?", but is for "where do I live?". `stated` caches
    each item's statements across calls of one search; `texts` holds the loaded candidates' text.
    With `relation`, a lone item's statements are parsed too: `relation_relevance_apply`
    needs them ("I moved to Lisbon" is the answer to "where do I live?" in a store of one)."""
    if len(ids) < 2 and not (ids and relation):
        return set()
    for item_id in ids:
        if item_id not in stated and item_id in texts:
            content, source = texts[item_id]
            # A summary's many lines are all replaced only in theory: read only for a question
            # about one relation (parsing them for any other question is work for nothing).
            stated[item_id] = user_statements(
                content, is_fact=source == "fact", is_summary=source == "summary" and bool(relation)
            )
    facts = {item_id: stated.get(item_id, []) for item_id in ids}
    stated_ids = sorted(item_id for item_id, found in facts.items() if found)
    pairs = set()
    for index, a in enumerate(stated_ids):
        for b in stated_ids[index + 1 :]:
            if statements_replaced(facts[a], facts[b], relation=relation) or statements_replaced(
                facts[b], facts[a], relation=relation
            ):
                pairs.add((a, b))
    return pairs


def keyword_query(query: str) -> str:
    """The query the keyword leg searches: a first-person question about a single-valued
    relation ("where do I live now?") also looks for the words its statements use."""
    relation = question_relation(query)
    return f"{query} {RELATION_TERMS[relation]}" if relation else query


def supersede_order(
    packed: list[Candidate],
    similarity: dict[tuple[int, int], float],
    *,
    as_of: float,
    updates: set[tuple[int, int]] = frozenset(),
) -> tuple[list[Candidate], dict[int, int]]:
    """Newer beats older among the first SUPERSEDE_WINDOW items.

    Items about the same subject (embeddings at least SUPERSEDE_SIMILARITY alike, or one
    stating a new value of what the other states: `updates`; said at
    least a day apart) form a group; its latest item said at or before
    `as_of` (epoch seconds) takes the group's best position, the older ones follow it newest
    first and are superseded by it, items said after `as_of` come last. Returns the new order
    and {superseded item id: id of the item that supersedes it}.
    """
    config = ranking_config()
    window = packed[: config.supersede_window]
    parent = {c.id: c.id for c in window}

    def root(item_id: int) -> int:
        while parent[item_id] != item_id:
            item_id = parent[item_id]
        return item_id

    by_id = {c.id: c for c in window}
    linked = {pair for pair, value in similarity.items() if value >= config.supersede_similarity}
    for a, b in linked | set(updates):
        if a not in by_id or b not in by_id:
            continue
        first, second = by_id[a], by_id[b]
        # A change needs a later date: two alike things said the same day are not one
        # replacing the other. A stated new value ("I moved from Austin to Denver") replaces
        # the old one as soon as it is said later.
        gap = abs(first.occurred_epoch - second.occurred_epoch)
        if gap < (config.update_min_gap_seconds if (a, b) in updates else 86400):
            continue
        if first.exchange_key and first.exchange_key == second.exchange_key:
            continue
        parent[root(a)] = root(b)
    groups: dict[int, list[Candidate]] = {}
    for candidate in window:
        groups.setdefault(root(candidate.id), []).append(candidate)
    superseded: dict[int, int] = {}
    order = list(window)
    for members in groups.values():
        if len(members) < 2:
            continue
        said = sorted(
            (c for c in members if c.occurred_epoch <= as_of),
            key=lambda c: -c.occurred_epoch,
        )
        later = sorted(
            (c for c in members if c.occurred_epoch > as_of), key=lambda c: c.occurred_epoch
        )
        if not said:
            continue
        current = said[0]
        for older in said[1:]:
            if older.occurred_epoch < current.occurred_epoch:
                superseded[older.id] = current.id
        positions = sorted(order.index(c) for c in members)
        for position, candidate in zip(positions, said + later, strict=True):
            order[position] = candidate
    return order + packed[config.supersede_window :], superseded
