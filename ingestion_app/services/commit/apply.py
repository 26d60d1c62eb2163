"""Applying decisions: new facts, updates with history, all inside the commit's transaction."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from ingestion_app.models import FactHistory, MemoryItem
from ingestion_app.selectors import memory_get_for_user
from ingestion_app.services.commit.decide import Decision
from ingestion_app.services.commit.distill import SUBJECT_PREFIX, Fact
from ingestion_app.services.memory_store import (
    MemoryScope,
    memory_item_build,
    memory_item_content_set,
    memory_items_bulk_create,
)
from mnemo_text.keywords import tags
from sessions_app.models import ChatSession, Message
from webhooks_app.services.events import (
    MEMORY_CREATED,
    MEMORY_UPDATED,
    events_emit,
    memory_as_event,
)


@dataclass
class CommittedFact:
    id: int
    content: str
    event: str  # FactHistory.Event.ADD or UPDATE
    previous_content: str = ""


@dataclass
class Pending:
    """A rag_store row to insert; history collects its ADD and any update within this commit."""

    fact: Fact
    history: list[tuple[str, str, str, str]] = field(default_factory=list)


def _topics(text: str) -> list[str]:
    return [tag[:64] for tag in tags([SUBJECT_PREFIX.sub("", text)], k=3)]


def _occurred_at(fact: Fact, occurred: dict, *, default):
    times = [occurred[i] for i in fact.source_message_ids if i in occurred]
    return max(times) if times else default


def decisions_apply(
    *,
    user,
    session: ChatSession | None,
    project_id: str,
    rag_session_id: str,
    facts: list[Fact],
    decisions: list[Decision],
    messages: list[Message],
    model: str,
) -> tuple[list[CommittedFact], int, int]:
    """Insert added facts and rewrite updated ones, with a history row for every change.
    Returns the stored facts, how many previously stored facts were updated and how many
    facts the model judged already known (NOOP)."""
    occurred = {message.id: message.created_at for message in messages}
    now = timezone.now()
    pending: list[Pending] = []
    pending_of_fact: dict[int, int] = {}
    updated_rows: dict[int, CommittedFact] = {}
    updates = noops = 0
    for index, (fact, decision) in enumerate(zip(facts, decisions, strict=True)):
        if decision.event == "NOOP":
            noops += 1
        elif decision.event == FactHistory.Event.UPDATE and decision.pending_index is not None:
            target = pending[pending_of_fact[decision.pending_index]]
            target.history.append(
                (FactHistory.Event.UPDATE, target.fact.text, fact.text, decision.reason)
            )
            ids = fact.source_message_ids + [
                i for i in target.fact.source_message_ids if i not in fact.source_message_ids
            ]
            # Superseded before it was ever stored: one new fact, its history shows both values.
            target.fact = Fact(text=fact.text, source_message_ids=ids, embedding=fact.embedding)
        elif decision.event == FactHistory.Event.UPDATE:
            item = memory_get_for_user(user=user, memory_id=decision.memory_id, lock=True)
            previous = item.content
            memory_item_content_set(
                item, content=fact.text, embedding=fact.embedding, embedding_text=""
            )
            item.topics = _topics(fact.text)
            if session is not None:
                item.chat_session = session
            item.rag_session_id = rag_session_id
            item.source_message_ids = sorted(fact.source_message_ids)
            item.occurred_at = _occurred_at(fact, occurred, default=now)
            item.metadata = {**(item.metadata or {}), "model": model, "updated_by_commit": True}
            item.save()
            FactHistory.objects.create(
                memory=item,
                user=user,
                event=FactHistory.Event.UPDATE,
                previous_content=previous,
                new_content=fact.text,
                reason=decision.reason,
            )
            earlier = updated_rows.get(item.id)
            updated_rows[item.id] = CommittedFact(
                id=item.id,
                content=fact.text,
                event=FactHistory.Event.UPDATE,
                previous_content=earlier.previous_content if earlier else previous,
            )
            updates += 1
        else:
            pending_of_fact[index] = len(pending)
            pending.append(
                Pending(
                    fact=fact, history=[(FactHistory.Event.ADD, "", fact.text, decision.reason)]
                )
            )

    if session is not None:
        scope = MemoryScope.of_session(
            session, project_id=project_id, rag_session_id=rag_session_id
        )
    else:  # a fact added directly (memory_fact_add): the default app, no session
        scope = MemoryScope(
            user_id=user.pk,
            app_id=settings.MNEMO_DEFAULT_APP_ID,
            project_id=project_id,
            rag_session_id=rag_session_id,
        )
    rows = []
    for entry in pending:
        fact = entry.fact
        rows.append(
            memory_item_build(
                scope=scope,
                source=MemoryItem.Source.FACT,
                content=fact.text,
                embedding=fact.embedding,
                topics=_topics(fact.text),
                metadata={"model": model},
                source_message_ids=sorted(fact.source_message_ids),
                occurred_at=_occurred_at(fact, occurred, default=now),
                created_at=now,
            )
        )
    created = memory_items_bulk_create(rows)
    FactHistory.objects.bulk_create(
        FactHistory(
            memory=item,
            user=user,
            event=event,
            previous_content=previous,
            new_content=new,
            reason=reason,
            created_at=now,
        )
        for item, entry in zip(created, pending, strict=True)
        for event, previous, new, reason in entry.history
    )
    committed = [CommittedFact(id=item.id, content=item.content, event="ADD") for item in created]
    committed.extend(updated_rows.values())
    events_emit(user_id=user.pk, events=_memory_events(created, updated_rows))
    return committed, updates, noops


def _memory_events(created: list[MemoryItem], updated_rows: dict[int, CommittedFact]):
    """memory.created per new fact, memory.updated per rewritten one (read only when some
    endpoint will take them: `events_emit` consumes this lazily)."""
    for item in created:
        yield MEMORY_CREATED, {"memory": memory_as_event(item)}
    if updated_rows:
        for item in MemoryItem.objects.filter(id__in=list(updated_rows)).defer("embedding"):
            yield (
                MEMORY_UPDATED,
                {
                    "memory": memory_as_event(item),
                    "previous_content": updated_rows[item.id].previous_content,
                },
            )
