"""One fact given as text (an agent's "remember this", the MCP `add_memory` tool), stored by
Commit to Memory's rules: the same duplicate check, ADD / UPDATE / NOOP decision and history."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from ingestion_app.services.commit.apply import decisions_apply
from ingestion_app.services.commit.decide import (
    facts_decide_offline,
    facts_decide_with_llm,
    facts_drop_duplicates,
)
from ingestion_app.services.commit.distill import Fact, fact_clean, facts_embed
from memory_site.db_locks import advisory_transaction_lock
from memory_site.errors import InvalidInput, UpstreamError
from memory_site.providers import ProviderError, get_llm, model_or_offline


@dataclass
class FactAddResult:
    """What `memory_fact_add` did: ADD (stored), UPDATE (replaced `previous_content` of
    memory `memory_id`), NOOP (the model judged it known) or DUPLICATE (nearly identical to
    memory `memory_id`)."""

    event: str
    content: str
    memory_id: int | None = None
    previous_content: str = ""

    # How the API and MCP name the outcome.
    STATUS = {"ADD": "added", "UPDATE": "updated", "NOOP": "known", "DUPLICATE": "duplicate"}

    def as_dict(self) -> dict:
        body = {
            "status": self.STATUS[self.event],
            "memory_id": self.memory_id,
            "content": self.content,
        }
        if self.previous_content:
            body["previous_content"] = self.previous_content
        return body


def memory_fact_add(*, user, text: str, project_id: str = "") -> FactAddResult:
    """Store one fact given as text by Commit to Memory's rules.

    The text is redacted and embedded; nearly identical to a stored fact: DUPLICATE, nothing
    written; otherwise the same ADD / UPDATE / NOOP decision as a commit (the model with one,
    `is_update` offline), an UPDATE rewriting the stored fact with a history row. The fact
    belongs to the default app and no session. Serialized with the user's commits by the same
    advisory lock. Raises InvalidInput (empty text) and UpstreamError (model or embedder
    failed; nothing stored).
    """
    cleaned = fact_clean(text)
    if not cleaned:
        raise InvalidInput("The memory text must not be empty.", field="text")
    llm = get_llm()
    facts = [Fact(text=cleaned, source_message_ids=[])]
    try:
        with transaction.atomic():
            advisory_transaction_lock(f"memory-commit:user:{user.pk}")
            facts_embed(facts)
            kept, _ = facts_drop_duplicates(user=user, facts=facts)
            if not kept:
                nearest = facts[0].neighbours[0].id if facts[0].neighbours else None
                return FactAddResult(event="DUPLICATE", content=cleaned, memory_id=nearest)
            decisions = model_or_offline(
                lambda llm: facts_decide_with_llm(llm, user=user, session=None, facts=kept),
                lambda: facts_decide_offline(kept),
                llm=llm,
            )
            committed, _, noops = decisions_apply(
                user=user,
                session=None,
                project_id=project_id,
                rag_session_id="",
                facts=kept,
                decisions=decisions,
                messages=[],
                model=llm.model,
            )
    except ProviderError as exc:
        raise UpstreamError(
            f"The model failed while adding the memory; nothing was stored. ({exc})",
            code="memory_upstream_error",
        ) from exc
    if noops or not committed:
        return FactAddResult(event="NOOP", content=cleaned, memory_id=decisions[0].memory_id)
    fact = committed[0]
    return FactAddResult(
        event=fact.event,
        content=fact.content,
        memory_id=fact.id,
        previous_content=fact.previous_content,
    )
