"""Duplicates and decisions: each new fact against its nearest stored facts (ADD / UPDATE / NOOP).

A fact nearly identical to a stored fact (or one kept earlier in this commit) is skipped before
any decision; the rest get a decision from the LLM or, offline, from the documented
`mnemo_text.fact_updates.is_update` rule.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from ingestion_app.models import FactHistory
from ingestion_app.selectors import facts_nearest_many
from ingestion_app.services.commit.distill import Fact, chat_json_with_usage
from memory_site.providers import ProviderError
from mnemo_text.fact_updates import is_update
from sessions_app.models import ChatSession

logger = logging.getLogger("ingestion_app.services.commit")

# Stored facts shown to the decision step (LLM) or checked with is_update (offline) per new fact.
NEIGHBOURS_PER_FACT = 5
# Below this cosine similarity a stored fact is not about the same thing: not worth a decision.
CANDIDATE_MIN_SIMILARITY = 0.3

DECISIONS_SCHEMA = {
    "type": "object",
    "properties": {
        "decisions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "fact_index": {"type": "integer"},
                    "event": {"type": "string", "enum": ["ADD", "UPDATE", "NOOP"]},
                    "memory_id": {"type": ["integer", "null"]},
                    "reason": {"type": "string"},
                },
                "required": ["fact_index", "event", "memory_id", "reason"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["decisions"],
    "additionalProperties": False,
}

DECIDE_PROMPT = """You maintain a user's long-term memory. For each new fact you get the stored
memories most similar to it. Decide one event per new fact:
- ADD: new information, not stored yet (memory_id null).
- UPDATE: same subject, new value: the new fact replaces a stored memory that it makes
  outdated or wrong ("The user moved to Berlin" replaces "The user lives in Paris").
  memory_id is that stored memory's id.
- NOOP: the information is already stored (memory_id of the memory that has it, or null).
Give a short reason for each decision. Return one decision per fact_index."""


@dataclass
class Decision:
    event: str  # ADD | UPDATE | NOOP
    memory_id: int | None = None  # stored memory updated
    pending_index: int | None = None  # fact added earlier in this commit, updated
    reason: str = ""


def _unit_matrix(facts: list[Fact]) -> np.ndarray:
    """Rows are the facts' embeddings scaled to unit length, so a dot product is the cosine."""
    matrix = np.asarray([fact.embedding for fact in facts], dtype=np.float64)
    if not len(matrix):
        return matrix.reshape(0, 0)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def facts_drop_duplicates(*, user, facts: list[Fact]) -> tuple[list[Fact], int]:
    """Skip facts nearly identical to a stored fact or to one kept earlier in this commit;
    remember each kept fact's nearest stored facts for the decision step."""
    threshold = settings.MNEMO_FACT_DUPLICATE_SIMILARITY
    similarities = _unit_matrix(facts)
    similarities = similarities @ similarities.T if len(facts) else similarities
    kept: list[Fact] = []
    kept_indexes: list[int] = []
    duplicates = 0
    neighbours = facts_nearest_many(
        user=user,
        embeddings=[fact.embedding for fact in facts],
        limit=NEIGHBOURS_PER_FACT,
        min_similarity=CANDIDATE_MIN_SIMILARITY,
    )
    for index, fact in enumerate(facts):
        fact.neighbours = neighbours[index]
        best_stored = fact.neighbours[0].similarity if fact.neighbours else 0.0
        best_batch = max((float(similarities[index, k]) for k in kept_indexes), default=0.0)
        if max(best_stored, best_batch) >= threshold:
            duplicates += 1
            continue
        kept.append(fact)
        kept_indexes.append(index)
    return kept, duplicates


def facts_decide_offline(facts: list[Fact]) -> list[Decision]:
    """The similarity rule: a fact updates the most similar stored fact (or fact added earlier
    in this commit) that `is_update` says it replaces; otherwise it is added."""
    decisions: list[Decision] = []
    current_text: dict[int, str] = {}
    similarities = _unit_matrix(facts)
    similarities = similarities @ similarities.T if len(facts) else similarities
    for index, fact in enumerate(facts):
        options: list[tuple[float, int | None, int | None, str]] = [
            (n.similarity, n.id, None, current_text.get(n.id, n.content)) for n in fact.neighbours
        ]
        for earlier in range(index):
            if decisions[earlier].event != FactHistory.Event.ADD:
                continue
            similarity = float(similarities[index, earlier])
            if similarity >= CANDIDATE_MIN_SIMILARITY:
                options.append((similarity, None, earlier, facts[earlier].text))
        decision = Decision(event=FactHistory.Event.ADD, reason="New information.")
        for similarity, memory_id, pending_index, text in sorted(options, key=lambda o: -o[0]):
            if is_update(text, fact.text):
                decision = Decision(
                    event=FactHistory.Event.UPDATE,
                    memory_id=memory_id,
                    pending_index=pending_index,
                    reason=(
                        f'Same subject with a new value: replaces "{text}" '
                        f"(rule is_update, similarity {similarity:.2f})."
                    ),
                )
                if memory_id is not None:
                    current_text[memory_id] = fact.text
                break
        decisions.append(decision)
    return decisions


def facts_decide_with_llm(
    llm, *, user, session: ChatSession | None, facts: list[Fact]
) -> list[Decision]:
    """The model decides ADD / UPDATE / NOOP for facts that have similar stored memories; a fact
    with none is an ADD without asking. Invalid answers fall back to ADD (never lose a fact)."""
    decisions = [
        Decision(event=FactHistory.Event.ADD, reason="No similar memory stored.") for _ in facts
    ]
    asked = [index for index, fact in enumerate(facts) if fact.neighbours]
    if not asked:
        return decisions
    request = {
        "new_facts": [
            {
                "fact_index": index,
                "text": facts[index].text,
                "similar_memories": [
                    {"memory_id": n.id, "text": n.content} for n in facts[index].neighbours
                ],
            }
            for index in asked
        ]
    }
    prompt = [
        {"role": "system", "content": DECIDE_PROMPT},
        {"role": "user", "content": json.dumps(request, ensure_ascii=False)},
    ]
    payload = chat_json_with_usage(
        llm,
        user=user,
        session=session,
        prompt=prompt,
        schema=DECISIONS_SCHEMA,
        name="memory_decisions",
    )
    answers = payload.get("decisions")
    if not isinstance(answers, list):
        raise ProviderError("LLM answer has no 'decisions' list")
    for answer in answers:
        if not isinstance(answer, dict):
            continue
        index = answer.get("fact_index")
        if not isinstance(index, int) or index not in asked:
            continue
        event = str(answer.get("event", "")).upper()
        reason = str(answer.get("reason") or "")[:500]
        allowed_ids = {n.id for n in facts[index].neighbours}
        memory_id = answer.get("memory_id")
        if event == FactHistory.Event.UPDATE and memory_id in allowed_ids:
            decisions[index] = Decision(
                event=FactHistory.Event.UPDATE, memory_id=memory_id, reason=reason
            )
        elif event == "NOOP":
            decisions[index] = Decision(event="NOOP", reason=reason)
        elif event == FactHistory.Event.UPDATE:
            logger.info("LLM chose UPDATE of memory %r, not a candidate; adding instead", memory_id)
            decisions[index] = Decision(
                event=FactHistory.Event.ADD, reason="Model named an unknown memory to update."
            )
        else:
            decisions[index] = Decision(
                event=FactHistory.Event.ADD, reason=reason or "New information."
            )
    return decisions


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------
