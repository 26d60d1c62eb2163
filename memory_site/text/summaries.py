"""Extractive bullet digests of a conversation, and folding several digests into one."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory_site.text.facts import _FIRST_PERSON_RE, _OTHER_PERSON_RE
from memory_site.text.sentences import (
    _FILLER_OPENER_RE,
    _FILLER_SENTENCE_RE,
    _clip,
    _is_question,
    _is_request,
    _role_kind,
    _sentences,
)
from memory_site.text.third_person import _third_person
from memory_site.text.words import MAX_TEXT_CHARS, _content_keys


@dataclass
class _Unit:
    order: tuple[int, int]
    kind: str
    speaker: str
    text: str
    keys: list[str]
    relevance: float = 0.0
    vector: dict[str, float] | None = None


def _digest_line(unit: _Unit) -> str:
    sentence = _FILLER_OPENER_RE.sub("", unit.text).strip() or unit.text
    sentence = sentence[:1].upper() + sentence[1:]
    sentence = _clip(sentence, 200)
    if unit.kind == "user":
        if _is_question(sentence):
            return f"- User asked: {sentence}"
        if _is_request(sentence):
            return f"- User requested: {sentence}"
        if _FIRST_PERSON_RE.search(sentence) and not _OTHER_PERSON_RE.search(sentence):
            return f"- {_third_person(sentence)}"
        return f"- User: {sentence}"
    if unit.kind == "assistant":
        return f"- Assistant: {sentence}"
    return f"- {unit.speaker}: {sentence}"


def _tfidf(units: list[_Unit]) -> None:
    document_frequency: Counter = Counter()
    for unit in units:
        document_frequency.update(set(unit.keys))
    total = len(units)
    for unit in units:
        counts = Counter(unit.keys)
        vector = {
            key: count * (math.log((total + 1) / (document_frequency[key] + 1)) + 1.0)
            for key, count in counts.items()
        }
        norm = math.sqrt(sum(value * value for value in vector.values())) or 1.0
        unit.vector = {key: value / norm for key, value in vector.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(value * b.get(key, 0.0) for key, value in a.items())


def summarize(
    turns: list[tuple[str, str]],
    *,
    max_chars: int = 800,
    embed: Callable[[list[str]], Sequence[Sequence[float]]] | None = None,
) -> str:
    """A bullet digest ("- ..." lines, in conversation order) of the most informative sentences.

    Extractive and deterministic: sentences are scored by TF-IDF centrality (or, if ``embed`` is
    given, by cosine similarity of its vectors to their mean; it must be deterministic), with a
    small bonus for the user's own sentences, and picked with maximal marginal relevance so
    lines do not repeat each other. The user's statements are put in the third person, questions
    and requests are labelled. The result never exceeds ``max_chars`` nor, past 160 characters,
    half of the transcript (so it is never a replay), and it is cut at a line boundary.
    Greetings, thanks and other filler are never picked; empty input gives "".
    """
    if max_chars <= 0 or not turns:
        return ""
    units: list[_Unit] = []
    transcript_chars = 0
    for turn_index, turn in enumerate(turns):
        if not turn or len(turn) < 2:
            continue
        role, text = turn[0], turn[1]
        if not isinstance(text, str) or not text.strip():
            continue
        kind = _role_kind(str(role or ""))
        if kind == "skip":
            continue
        transcript_chars += min(len(text), MAX_TEXT_CHARS)
        speaker = str(role or "").strip() or "Speaker"
        for sentence_index, sentence in enumerate(_sentences(text)):
            if _FILLER_SENTENCE_RE.match(sentence) or _PLACEHOLDER_ONLY_RE.match(sentence):
                continue
            keys = _content_keys(sentence)
            if len(keys) < (1 if kind == "user" else 2):
                continue
            units.append(_Unit((turn_index, sentence_index), kind, speaker, sentence, keys))
    if not units:
        return ""
    budget = min(max_chars, max(160, transcript_chars // 2))
    first_user_turn = next((unit.order[0] for unit in units if unit.kind == "user"), -1)
    _tfidf(units)

    centroid: Counter = Counter()
    for unit in units:
        centroid.update(unit.vector)
    centroid_norm = math.sqrt(sum(value * value for value in centroid.values())) or 1.0
    for unit in units:
        relevance = _cosine(unit.vector, centroid) / centroid_norm
        if unit.kind == "user":
            relevance *= 1.2
            if unit.order[0] == first_user_turn:
                relevance *= 1.15  # the opening message usually states the purpose
        if len(unit.text.split()) > 45:
            relevance *= 0.8
        unit.relevance = relevance

    # Long conversations: MMR over the most central sentences only keeps this fast.
    pool = sorted(units, key=lambda u: (-u.relevance, u.order))[:80]
    similarity = _similarity_function(pool, embed)
    top_relevance = max(unit.relevance for unit in pool) or 1.0

    selected: list[int] = []
    lines: dict[int, str] = {}
    used = 0
    first_user = next((i for i, unit in enumerate(pool) if unit.kind == "user"), None)
    remaining = list(range(len(pool)))
    while remaining and (not selected or budget - used > 24) and len(selected) < 12:
        if not selected and first_user is not None:
            best = first_user  # the user's own words anchor every digest
        else:
            best = max(
                remaining,
                key=lambda i: (
                    0.7 * pool[i].relevance / top_relevance
                    - 0.3 * max((similarity(i, j) for j in selected), default=0.0),
                    -pool[i].order[0],
                    -pool[i].order[1],
                ),
            )
        remaining.remove(best)
        if any(similarity(best, j) >= 0.85 for j in selected):
            continue
        line = _digest_line(pool[best])
        cost = len(line) + (1 if used else 0)
        if used + cost > budget:
            if not selected and used == 0:
                line = _clip(line, budget)
                cost = len(line)
            else:
                continue
        selected.append(best)
        lines[best] = line
        used += cost
    ordered = sorted(selected, key=lambda i: pool[i].order)
    return "\n".join(lines[i] for i in ordered)


_PLACEHOLDER_ONLY_RE = re.compile(r"^[\s\W]*(?:\[[A-Z_ ]+\][\s\W]*)+$")


def _similarity_function(
    pool: list[_Unit], embed: Callable[[list[str]], Sequence[Sequence[float]]] | None
) -> Callable[[int, int], float]:
    if embed is None:
        return lambda i, j: _cosine(pool[i].vector, pool[j].vector)
    vectors = [list(map(float, vector)) for vector in embed([unit.text for unit in pool])]
    norms = [math.sqrt(sum(x * x for x in vector)) or 1.0 for vector in vectors]
    unit_vectors = [[x / norm for x in vector] for vector, norm in zip(vectors, norms, strict=True)]
    mean = [sum(column) / len(unit_vectors) for column in zip(*unit_vectors, strict=True)]
    mean_norm = math.sqrt(sum(x * x for x in mean)) or 1.0
    for unit, vector in zip(pool, unit_vectors, strict=True):
        centrality = sum(a * b for a, b in zip(vector, mean, strict=True)) / mean_norm
        unit.relevance = centrality * (1.2 if unit.kind == "user" else 1.0)
    cache: dict[tuple[int, int], float] = {}

    def similarity(i: int, j: int) -> float:
        key = (i, j) if i < j else (j, i)
        if key not in cache:
            cache[key] = sum(a * b for a, b in zip(unit_vectors[i], unit_vectors[j], strict=True))
        return cache[key]

    return similarity


def _digest_items(summary: str) -> list[str]:
    items: list[str] = []
    for line in (summary or "").splitlines():
        line = line.strip()
        if not line:
            continue
        if line[:2] in {"- ", "* ", "• "}:
            items.append("- " + line[2:].strip())
        else:
            items.extend("- " + sentence for sentence in _sentences(line))
    return items


def fold_summaries(summaries: list[str], *, max_chars: int) -> str:
    """Fold several digests (newest first) into one digest of at most ``max_chars``.

    Lines are taken round-robin (the first line of every digest, newest first, then every
    second line...) so older sessions stay represented while the newest win when space runs
    out; near-duplicate lines keep only their newest copy. Output is grouped newest first and
    cut at line boundaries; a single line longer than the budget is clipped.
    """
    if max_chars <= 0 or not summaries:
        return ""
    per_summary = [_digest_items(summary) for summary in summaries if isinstance(summary, str)]
    seen_keys: list[set[str]] = []
    candidates: list[tuple[int, int, str]] = []  # (round, summary index, line)
    for summary_index, items in enumerate(per_summary):
        for line_index, line in enumerate(items):
            candidates.append((line_index, summary_index, line))
    candidates.sort(key=lambda item: (item[0], item[1]))
    chosen: list[tuple[int, int, str]] = []
    used = 0
    for line_index, summary_index, line in candidates:
        keys = set(_content_keys(line)) or {line.lower()}
        if any(len(keys & old) / len(keys | old) >= 0.8 for old in seen_keys):
            continue
        cost = len(line) + (1 if used else 0)
        if used + cost > max_chars:
            if not chosen:
                line = _clip(line, max_chars)
                cost = len(line)
            else:
                continue
        seen_keys.append(keys)
        chosen.append((summary_index, line_index, line))
        used += cost
    chosen.sort(key=lambda item: (item[0], item[1]))
    return "\n".join(line for _summary, _line, line in chosen)
