"""Fusion and the slots of a search: reciprocal rank fusion, neighbour smoothing, the score
factors and recency (`rank_candidates`), and one slot per exchange (`pack_slots`)."""

from __future__ import annotations

import math

from ingestion_app.models import MemoryItem
from retrieval import trust
from retrieval.candidates import Candidate
from retrieval.config import ranking_config


def rrf(ranking: list[tuple[int, float]], weight: float) -> dict[int, float]:
    return {
        item_id: weight / (ranking_config().rrf_k + rank)
        for rank, (item_id, _) in enumerate(ranking, 1)
    }


def neighbours_smooth(candidates: dict[int, Candidate]) -> None:
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
        candidate.score += ranking_config().neighbour_weight * best


def recency_factor(occurred_epoch: float, now: float, half_life_days: float) -> float:
    age_days = max(0.0, (now - occurred_epoch) / 86400)
    return 0.5 + 0.5 * math.pow(0.5, age_days / half_life_days)


def rank_candidates(
    candidates: dict[int, Candidate],
    *,
    mode: str,
    named: list[str],
    min_similarity: float | None,
    recency_half_life_days: float | None,
    now: float,
) -> list[Candidate]:
    config = ranking_config()
    if mode == "hybrid":
        neighbours_smooth(candidates)
    trust.question_weight_apply(candidates)
    if mode != "semantic":
        if len(named) == 1:
            speaker = named[0].lower()
            for candidate in candidates.values():
                if candidate.is_message and candidate.speaker == speaker:
                    candidate.score *= config.speaker_boost
        for candidate in candidates.values():
            if candidate.is_covered_pair:
                candidate.score *= config.pair_weight
            if candidate.source == MemoryItem.Source.SUMMARY:
                candidate.score *= config.summary_weight
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
            candidate.recency_factor = recency_factor(
                candidate.occurred_epoch, now, recency_half_life_days
            )
            candidate.score *= candidate.recency_factor
        kept.append(candidate)
    kept.sort(key=lambda c: (-c.score, -(c.similarity or 0.0), -c.id))
    return kept


_ROLE_SPEAKERS = frozenset({"", "user", "assistant"})


def _own_statements(first: Candidate, second: Candidate) -> bool:
    """Two messages of one exchange between two named people ("Caroline", "Melanie": a chat
    logged with speaker names): each says something of its own and keeps its own slot. Only a
    prompt and the model's reply to it are one memory (in a chat between two people each turn
    is evidence of its own: one slot per exchange lost budget recall on such chats)."""
    return (
        first.is_message
        and second.is_message
        and first.speaker not in _ROLE_SPEAKERS
        and second.speaker not in _ROLE_SPEAKERS
        and first.speaker != second.speaker
    )


def pack_slots(ranked: list[Candidate], *, top_k: int) -> list[Candidate]:
    """At most top_k items in rank order, one slot per exchange (see COLLAPSE_ON_OVERLAP).

    When both turns of a live exchange rank (the user's message item and the reply's, items of
    different messages), the later-ranked one joins the first one's slot (`merged`: one
    result holding both turns in the order said) instead of being dropped. Messages of two
    named people keep a slot each (`_own_statements`).
    """
    config = ranking_config()
    packed: list[Candidate] = []
    covered: set[int] = set()
    exchanges: dict[str, Candidate] = {}
    for candidate in ranked:
        if len(packed) >= top_k:
            break
        messages = set(candidate.source_message_ids)
        if messages and (
            (messages & covered) if config.collapse_on_overlap else messages <= covered
        ):
            continue
        holder = exchanges.get(candidate.exchange_key) if candidate.exchange_key else None
        if (
            config.exchange_collapse
            and holder is not None
            and not _own_statements(holder, candidate)
        ):
            if (
                config.merge_turns
                and holder.is_message
                and candidate.is_message
                and not holder.merged
            ):
                holder.merged.append(candidate)
                covered |= messages
            continue
        packed.append(candidate)
        covered |= messages
        if candidate.exchange_key:
            exchanges[candidate.exchange_key] = candidate
    return packed
