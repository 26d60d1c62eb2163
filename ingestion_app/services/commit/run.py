"""Commit to Memory: distill a chat session's new messages into atomic facts, exactly once.

The reference workflow (read the high-water mark, load newer messages, distill, embed, insert,
upsert the mark) in one service and one transaction. The facts, their history rows and the new
mark are written together or not at all, so a failed model call never half-commits and a retry
redoes exactly the same messages.

Two ways to distill:
- With an LLM: structured JSON output, first the facts of the transcript, then one ADD /
  UPDATE / NOOP decision per new fact against its nearest stored facts.
- Offline (no LLM configured): `mnemo_text.facts.extract_facts` per user message, and the
  documented `mnemo_text.fact_updates.is_update` rule against the nearest stored facts.
In both, a fact whose cosine similarity to a stored fact (or to one already taken in this
commit) reaches MNEMO_FACT_DUPLICATE_SIMILARITY is skipped as a duplicate before any decision.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from ingestion_app.models import MemoryCommitLog
from ingestion_app.selectors import session_project_id
from ingestion_app.services.commit.apply import CommittedFact, decisions_apply
from ingestion_app.services.commit.decide import (
    facts_decide_offline,
    facts_decide_with_llm,
    facts_drop_duplicates,
)
from ingestion_app.services.commit.distill import (
    facts_distill_offline,
    facts_distill_with_llm,
    facts_embed,
)
from memory_site.db_locks import advisory_transaction_lock
from memory_site.errors import UpstreamError
from memory_site.providers import ProviderError, get_llm, model_or_offline
from memory_site.task_paths import PROFILE_MEMORIES_READ_TASK
from sessions_app.selectors import session_get_for_user, session_messages
from webhooks_app.services.events import COMMIT_COMPLETED, event_emit

logger = logging.getLogger("ingestion_app.services.commit")


@dataclass
class CommitResult:
    chat_session_id: str
    project_id: str
    messages_read: int
    facts_committed: int
    facts_updated: int
    duplicates_skipped: int
    high_water_mark: int
    toast_level: str
    toast_message: str
    facts: list[CommittedFact] = field(default_factory=list)

    @property
    def toast(self) -> dict:
        return {"level": self.toast_level, "message": self.toast_message}


def memory_commit(
    *, user, chat_session_id: uuid.UUID | str, rag_session_id: str = ""
) -> CommitResult:
    """Distill the session's messages above its high-water mark into facts; idempotent.

    Facts, their history and the new mark are written in one transaction. Commits of one user
    are serialized by a transaction-scoped advisory lock (and the session's commit-log row is
    locked FOR UPDATE), so concurrent calls distill each message once and the cross-session
    duplicate check always sees the facts of the commit before. No new messages: nothing is
    written. Raises NotFound (not the caller's session) and UpstreamError (LLM or embedder
    failed; nothing stored, mark unchanged).
    """
    session = session_get_for_user(user=user, session_id=chat_session_id, field="chat_session_id")
    MemoryCommitLog.objects.get_or_create(chat_session=session, defaults={"user": user})
    llm = get_llm()
    stage = "language model"
    try:
        with transaction.atomic():
            advisory_transaction_lock(f"memory-commit:user:{user.pk}")
            log = MemoryCommitLog.objects.select_for_update().get(chat_session=session)
            messages = list(session_messages(session=session, after_id=log.high_water_mark))
            project_id = session_project_id(session=session)
            if not messages:
                return CommitResult(
                    chat_session_id=str(session.id),
                    project_id=project_id,
                    messages_read=0,
                    facts_committed=0,
                    facts_updated=0,
                    duplicates_skipped=0,
                    high_water_mark=log.high_water_mark,
                    toast_level="info",
                    toast_message="No new messages since the last commit: nothing new to commit.",
                )
            facts = model_or_offline(
                lambda llm: facts_distill_with_llm(
                    llm, user=user, session=session, messages=messages
                ),
                lambda: facts_distill_offline(messages),
                llm=llm,
            )
            stage = "embedding model"
            facts_embed(facts)
            stage = "language model"
            kept, duplicates = facts_drop_duplicates(user=user, facts=facts)
            decisions = model_or_offline(
                lambda llm: facts_decide_with_llm(llm, user=user, session=session, facts=kept),
                lambda: facts_decide_offline(kept),
                llm=llm,
            )
            committed, updated, noops = decisions_apply(
                user=user,
                session=session,
                project_id=project_id,
                rag_session_id=rag_session_id,
                facts=kept,
                decisions=decisions,
                messages=messages,
                model=llm.model,
            )
            duplicates += noops
            log.high_water_mark = max(log.high_water_mark, max(m.id for m in messages))
            log.commit_count += 1
            log.facts_committed += sum(1 for fact in committed if fact.event == "ADD")
            log.facts_updated += updated
            log.duplicates_skipped += duplicates
            log.last_commit_at = timezone.now()
            log.save()
            event_emit(
                user_id=user.pk,
                event=COMMIT_COMPLETED,
                data={
                    "session_id": str(session.id),
                    "messages_read": len(messages),
                    "facts_added": [f.id for f in committed if f.event == "ADD"],
                    "facts_updated": [f.id for f in committed if f.event != "ADD"],
                    "duplicates_skipped": duplicates,
                    "high_water_mark": log.high_water_mark,
                },
            )
            if committed:
                # The profile reads the facts' statements after the commit, in a task.
                fact_ids = [fact.id for fact in committed]
                transaction.on_commit(
                    lambda: async_task(PROFILE_MEMORIES_READ_TASK, fact_ids, "commit")
                )
    except ProviderError as exc:
        logger.warning("commit to memory failed for session %s: %s", session.id, exc)
        raise UpstreamError(
            f"The {stage} failed while committing to memory; nothing was stored and the "
            f"session's messages will be read again next time. ({exc})",
            code="commit_upstream_error",
        ) from exc
    added = sum(1 for fact in committed if fact.event == "ADD")
    level, message = _toast(
        messages_read=len(messages), added=added, updated=updated, duplicates=duplicates
    )
    return CommitResult(
        chat_session_id=str(session.id),
        project_id=project_id,
        messages_read=len(messages),
        facts_committed=added,
        facts_updated=updated,
        duplicates_skipped=duplicates,
        high_water_mark=log.high_water_mark,
        toast_level=level,
        toast_message=message,
        facts=committed,
    )


def _toast(*, messages_read: int, added: int, updated: int, duplicates: int) -> tuple[str, str]:
    noun = "message" if messages_read == 1 else "messages"
    if not added and not updated:
        known = f" ({duplicates} already known)" if duplicates else ""
        return "info", f"Read {messages_read} new {noun}: nothing new to remember{known}."
    parts = [f"{added} new fact{'' if added == 1 else 's'}"]
    if updated:
        parts.append(f"{updated} updated")
    if duplicates:
        parts.append(f"{duplicates} duplicate{'' if duplicates == 1 else 's'} skipped")
    return "success", f"Committed to memory from {messages_read} {noun}: " + ", ".join(parts) + "."


# ---------------------------------------------------------------------------------------------
# Distillation
# ---------------------------------------------------------------------------------------------
