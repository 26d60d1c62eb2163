"""Re-index stored memory into the current representation (passages, exchange keys,
provenance, the not-indexed rule), for data written before it existed.

Also adds the category words of items written before them (``categories_add``).

Run by `manage.py memory_reindex`. Idempotent: what is already in the current form is left
alone, so a second run changes nothing. Batched: one chat session (its messages embedded in one
embedder call) or IMPORT_BATCH imported chunks at a time, each in its own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from ingestion_app.chunking.markdown import conversation_key
from ingestion_app.models import MemoryItem
from ingestion_app.parsers.base import TurnPair
from ingestion_app.services.import_passages import PASSAGE_RULE, chunk_passage_items
from ingestion_app.services.inline import TURN_PAIR_KIND
from ingestion_app.services.item_entities import memory_item_entity_types
from ingestion_app.services.memory_store import (
    MemoryScope,
    exchange_key,
    memory_items_bulk_create,
    memory_items_embed,
    memory_provenance,
    memory_provenance_default,
)
from ingestion_app.services.message_index import (
    GRANULARITY,
    INDEXED_ROLES,
    LOCAL_PLATFORM,
    message_chunk_id,
    message_items_prepare,
)
from ingestion_app.services.pending_items import pending_items_store
from mnemo_text.categories import category_terms
from mnemo_text.indexable import memory_text_indexable
from sessions_app.models import ChatSession, Message

IMPORT_BATCH = 200


@dataclass
class ReindexOutcome:
    sessions: int = 0
    messages_reindexed: int = 0
    items_removed: int = 0
    items_labelled: int = 0
    import_passages: int = 0
    items_categorized: int = 0


def _message_current(message: Message, items: list[MemoryItem]) -> bool:
    """Whether a message's stored items are already in the current form (none for a message
    that is not a memory)."""
    if not items:
        return message.is_no_model_reply or not memory_text_indexable(message.content_sanitized)
    return all(
        item.metadata.get("exchange_key") and item.metadata.get("provenance") for item in items
    )


def session_reindex(*, session: ChatSession, outcome: ReindexOutcome) -> None:
    """Re-index one session's message items (passages, rule, labels) and label its chunks."""
    messages = list(
        Message.objects.filter(session=session, role__in=INDEXED_ROLES)
        .exclude(content_sanitized="")
        .order_by("id")
    )
    stored: dict[int, list[MemoryItem]] = {}
    for item in MemoryItem.objects.filter(chat_session=session, metadata__granularity=GRANULARITY):
        message_id = item.metadata.get("message_id")
        if isinstance(message_id, int):
            stored.setdefault(message_id, []).append(item)
    stale = [m for m in messages if not _message_current(m, stored.get(m.id, []))]
    with transaction.atomic():
        for message in stale:
            removed, _ = MemoryItem.objects.filter(
                Q(chunk_id=message_chunk_id(message.id))
                | Q(chunk_id__startswith=f"{message_chunk_id(message.id)}-p")
            ).delete()
            outcome.items_removed += removed
        pending = [item for message in stale for item in message_items_prepare(message=message)]
        pending_items_store(pending)
        outcome.messages_reindexed += len(stale)
        for chunk in MemoryItem.objects.filter(
            chat_session=session, metadata__kind=TURN_PAIR_KIND
        ).exclude(metadata__has_key="exchange_key"):
            metadata = dict(chunk.metadata)
            metadata["exchange_key"] = exchange_key(
                conversation_key=conversation_key(
                    namespace=str(chunk.user_id),
                    platform=LOCAL_PLATFORM,
                    conversation_id=str(session.id),
                ),
                turn_range=str(metadata.get("turn_range") or metadata.get("pair_number") or ""),
            )
            metadata["provenance"] = memory_provenance(
                source="chat", title=session.title or "", moment=chunk.occurred_at
            )
            MemoryItem.objects.filter(id=chunk.id).update(metadata=metadata)
            outcome.items_labelled += 1
    outcome.sessions += 1


def _chunk_pairs(item: MemoryItem) -> list[TurnPair]:
    """The turn pairs of a stored chunk's exchange text (`**User:**` / `**Assistant:**` blocks),
    numbered from its turn range."""
    first = str(item.metadata.get("turn_range") or "1").split("-")[0]
    index = int(first) if first.isdigit() else 1
    pairs: list[TurnPair] = []
    for block in item.content.split("**User:**\n")[1:]:
        user_text, _, reply = block.partition("\n\n**Assistant:**\n")
        pairs.append(
            TurnPair(index=index, user_text=user_text.strip(), assistant_text=reply.strip())
        )
        index += 1
    return pairs


def imports_reindex(*, user_id: int | None, outcome: ReindexOutcome) -> None:
    """Label imported chunks (exchange key, provenance) and add the passages the current
    PASSAGE_RULE gives them (those already stored are kept), IMPORT_BATCH chunks per
    transaction and embedder batch."""
    rows = (
        MemoryItem.objects.filter(
            source=MemoryItem.Source.CHUNK, chat_session__isnull=True, metadata__has_key="pair_keys"
        )
        .filter(~Q(metadata__has_key="passage_rule") | Q(metadata__passage_rule__lt=PASSAGE_RULE))
        .order_by("id")
    )
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    while True:
        batch = list(rows[:IMPORT_BATCH])
        if not batch:
            return
        passages: list[MemoryItem] = []
        for item in batch:
            metadata = item.metadata
            metadata.setdefault(
                "exchange_key",
                exchange_key(
                    conversation_key=metadata.get("conversation_key") or "",
                    turn_range=str(metadata.get("turn_range") or ""),
                ),
            )
            metadata.setdefault(
                "provenance",
                memory_provenance(
                    source="import",
                    platform=metadata.get("source_platform") or "",
                    title=metadata.get("conversation_title") or "",
                    moment=item.occurred_at,
                ),
            )
            metadata["passage_rule"] = PASSAGE_RULE
            passages.extend(
                chunk_passage_items(
                    chunk_item=item,
                    pairs=_chunk_pairs(item),
                    title=metadata.get("conversation_title") or "",
                    platform=metadata.get("source_platform") or "",
                    conversation_id=str(metadata.get("conversation_id") or ""),
                    job_id=str(metadata.get("import_job_id") or ""),
                )
            )
        taken = set(
            MemoryItem.objects.filter(chunk_id__in=[p.chunk_id for p in passages]).values_list(
                "chunk_id", flat=True
            )
        )
        passages = [p for p in passages if p.chunk_id not in taken]
        memory_items_embed(passages)
        with transaction.atomic():
            for item in batch:
                MemoryItem.objects.filter(id=item.id).update(metadata=item.metadata)
            memory_items_bulk_create(passages, batch_size=500)
        outcome.items_labelled += len(batch)
        outcome.import_passages += len(passages)


def other_items_label(*, user_id: int | None, outcome: ReindexOutcome) -> None:
    """Give every remaining item without one its provenance (facts, documents, summaries)."""
    rows = MemoryItem.objects.exclude(metadata__has_key="provenance").select_related("chat_session")
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    for item in rows.iterator(1000):
        metadata = dict(item.metadata or {})
        metadata["provenance"] = memory_provenance_default(
            source=item.source,
            scope=MemoryScope(
                user_id=item.user_id, app_id=item.app_id, chat_session=item.chat_session
            ),
            header=item.header,
            metadata=metadata,
            occurred_at=item.occurred_at,
        )
        MemoryItem.objects.filter(id=item.id).update(metadata=metadata)
        outcome.items_labelled += 1


def categories_add(*, user_id: int | None, outcome: ReindexOutcome) -> None:
    """Give items written before category words (``mnemo_text.categories``) theirs, at
    the end of the keyword context as the writers put them; an item that has them already (or
    shows no category) is left alone, so a second run changes nothing."""
    rows = MemoryItem.objects.only(
        "id", "user_id", "content", "keyword_context", "metadata"
    ).order_by("id")
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    changed: list[MemoryItem] = []
    for item in rows.iterator(1000):
        text = item.content or ""
        if item.metadata.get("granularity") == GRANULARITY:
            text = text.partition(": ")[2]  # the message without its "Speaker: " label
        terms = category_terms(text, entity_types=memory_item_entity_types(item))
        context = item.keyword_context or ""
        if not terms or context.endswith(terms):
            continue
        item.keyword_context = f"{context}\n{terms}" if context else terms
        changed.append(item)
        if len(changed) >= 500:
            MemoryItem.objects.bulk_update(changed, ["keyword_context"])
            outcome.items_categorized += len(changed)
            changed = []
    if changed:
        MemoryItem.objects.bulk_update(changed, ["keyword_context"])
        outcome.items_categorized += len(changed)


def memory_reindex(*, user_id: int | None = None) -> ReindexOutcome:
    """Re-index every session, imported chunk and other item (of one user, or all)."""
    outcome = ReindexOutcome()
    sessions = ChatSession.objects.order_by("opened_at")
    if user_id is not None:
        sessions = sessions.filter(user_id=user_id)
    for session in sessions.iterator(200):
        session_reindex(session=session, outcome=outcome)
    imports_reindex(user_id=user_id, outcome=outcome)
    other_items_label(user_id=user_id, outcome=outcome)
    categories_add(user_id=user_id, outcome=outcome)
    return outcome
