"""Writes to a user's memories from the memories API: edit (re-embedded) and real delete."""

from __future__ import annotations

from django.db import transaction

from ingestion_app.models import FactHistory, MemoryItem
from ingestion_app.selectors import memory_get_for_user
from ingestion_app.services.memory_store import memory_item_content_set
from memory_site.errors import InvalidInput, UpstreamError
from memory_site.providers import ProviderError, get_embedder
from mnemo_text.redaction import redact
from webhooks_app.services.events import (
    MEMORY_DELETED,
    MEMORY_UPDATED,
    event_emit,
    memory_as_event,
)


def memory_update(
    *,
    user,
    memory_id: int,
    content: str | None = None,
    topics: list[str] | None = None,
    metadata: dict | None = None,
    project_id: str | None = None,
    reason: str = "",
) -> MemoryItem:
    """Edit one of the caller's memories. New content is redacted, re-embedded and recorded
    as an EDIT history row (previous and new text); the embedding is computed before the row
    is locked, so a failing embedder changes nothing. Raises NotFound (not the caller's),
    InvalidInput (blank content) and UpstreamError (embedder failed)."""
    memory = memory_get_for_user(user=user, memory_id=memory_id)
    new_content = None
    embedding = None
    embedding_text = ""
    if content is not None:
        new_content = redact(
            " ".join(content.split()) if memory.source == MemoryItem.Source.FACT else content
        )
        if not new_content.strip():
            raise InvalidInput("Content must not be empty.", field="content")
        if new_content != memory.content:
            # A blank embedding_text means "the content"; an item embedded with its header
            # (chunks, documents) keeps being embedded with it.
            if memory.embedding_text and memory.header:
                embedding_text = f"{memory.header}\n\n{new_content}"
            try:
                embedding = get_embedder().embed([embedding_text or new_content])[0]
            except ProviderError as exc:
                raise UpstreamError(
                    f"The embedding model failed; the memory was not changed. ({exc})",
                    code="embedding_failed",
                ) from exc
        else:
            new_content = None
    with transaction.atomic():
        memory = memory_get_for_user(user=user, memory_id=memory_id, lock=True)
        previous = memory.content
        if new_content is not None:
            memory_item_content_set(
                memory, content=new_content, embedding=embedding, embedding_text=embedding_text
            )
        if topics is not None:
            memory.topics = [topic.strip()[:64] for topic in topics if topic.strip()]
        if metadata is not None:
            memory.metadata = metadata
        if project_id is not None:
            memory.project_id = project_id
        memory.save()
        if new_content is not None:
            FactHistory.objects.create(
                memory=memory,
                user=user,
                event=FactHistory.Event.EDIT,
                previous_content=previous,
                new_content=new_content,
                reason=reason or "Edited by the user.",
            )
        event_emit(
            user_id=user.pk,
            event=MEMORY_UPDATED,
            data={"memory": memory_as_event(memory), "previous_content": previous},
        )
    return MemoryItem.objects.defer("embedding", "raw_content").get(id=memory.id)


def memories_of_messages_delete(*, user_id: int, message_ids: list[int]) -> int:
    """Delete the memory items made from any of these messages (their message items and the
    exchange chunks covering them), for a message that is going away; returns how many."""
    if not message_ids:
        return 0
    items = MemoryItem.objects.filter(user_id=user_id, source_message_ids__overlap=message_ids)
    return items.delete()[1].get(MemoryItem._meta.label, 0)


def memory_delete(*, user, memory_id: int) -> None:
    """Delete one of the caller's memories for real: the row, its embedding and its history
    go (nothing is kept for recovery). Raises NotFound (not the caller's)."""
    with transaction.atomic():
        memory = memory_get_for_user(user=user, memory_id=memory_id, lock=True)
        gone = {"id": memory.id, "source": memory.source, "app_id": memory.app_id}
        memory.delete()
        event_emit(user_id=user.pk, event=MEMORY_DELETED, data={"memory": gone})
