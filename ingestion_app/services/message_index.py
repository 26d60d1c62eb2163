"""Message items: every user/assistant message becomes its own retrievable rag_store row.

Why one item per message (measured on LoCoMo, /work/briefs/retrieval_findings.md): a question is
usually answered by one line of a conversation, and short items let ~11 answers fit in a 2,000
character budget where turn pairs fit half as many (79% evidence recall against 75%). The words
a question uses often sit in the neighbouring messages (the other speaker's question, the
follow-up), so the two messages before and after are indexed with the item at half weight
(`keyword_context`, weight B of the search vector) without being returned; the embedding
covers the message and the one before it.

Rows are chunks (`source="chunk"`) with `metadata["granularity"] == "message"`, the speaker
(`message.metadata["speaker"]` when the client names one, else the role), the message's
position in its session (neighbour smoothing in the search) and its id. The chunk id
``msg-<message id>`` makes the hook idempotent and lets the next message find the rows whose
keyword context it completes.
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from ingestion_app.models import MemoryItem
from ingestion_app.services.memory_store import MemoryScope, memory_item_create
from ingestion_app.services.pending_items import PendingItem, pending_items_store
from sessions_app.models import Message

GRANULARITY = "message"
INDEXED_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)
# Neighbours indexed on each side (measured: +-2 beats +-1 by ~1 point, +-3 adds nothing).
CONTEXT_WINDOW = 2
# One neighbour line never adds more than this to an item's keyword context.
CONTEXT_LINE_CHARS = 1500
# Characters of the previous message embedded with a message (see message_embedding_text).
EMBEDDING_PREVIOUS_CHARS = 300


def message_chunk_id(message_id: int) -> str:
    return f"msg-{message_id}"


def message_date_label(moment: datetime) -> str:
    """'8 May 2023': the date form shown with items and indexed with them (questions name it)."""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    return f"{local.day} {local:%B %Y}"


def message_speaker(message: Message) -> tuple[str, str]:
    """(speaker, label): the client's speaker name if it gave one, else the role.

    The label is what the item's text starts with ("Caroline: ...", "User: ...").
    """
    named = (message.metadata or {}).get("speaker")
    if isinstance(named, str) and named.strip():
        name = " ".join(named.split())[:64]
        return name, name
    return message.role, message.role.capitalize()


def message_line(message: Message) -> str:
    """`Speaker: text` of a message: an item's content and its neighbours' context line."""
    return f"{message_speaker(message)[1]}: {message.content_sanitized.strip()}"


def message_embedding_text(*, date_label: str, line: str, previous_line: str = "") -> str:
    """What a message item is embedded from: date, its own line, then the previous message.

    The previous message is usually the question this one answers (or the remark it reacts
    to), so questions find answers; measured on LoCoMo, +0.9 points over the message alone and
    as good as a second embedding of the pair (which would double vector storage). It comes
    second and is capped, so the model's 256-token window never cuts this message's own text.
    """
    text = f"({date_label}) {line}"
    if previous_line:
        text += "\n" + previous_line[:EMBEDDING_PREVIOUS_CHARS]
    return text


def _context_of(window: list[Message], index: int) -> str:
    lo, hi = max(0, index - CONTEXT_WINDOW), index + CONTEXT_WINDOW + 1
    return "\n".join(
        message_line(neighbour)[:CONTEXT_LINE_CHARS]
        for position, neighbour in enumerate(window[lo:hi], start=lo)
        if position != index
    )


def message_index(*, message: Message) -> MemoryItem | None:
    """Store `message` as a message item (embedded on its own); see `message_item_prepare`."""
    pending = message_item_prepare(message=message)
    return None if pending is None else pending_items_store([pending])[0]


def message_item_prepare(*, message: Message) -> PendingItem | None:
    """The message item of `message`, ready to embed and store.

    Indexes user and assistant messages with text (others return None). The new item's keyword
    context holds the previous CONTEXT_WINDOW messages; storing it adds this message to the
    context of those messages' items (single-row UPDATEs). Idempotent: a second run gets the
    stored item back as `existing`. Without an embedding (embedder failure) the item is stored
    anyway: keyword search still finds it and `manage.py reembed` fills it in. Holds no lock.
    """
    if (
        message.role not in INDEXED_ROLES
        or not message.content_sanitized.strip()
        or message.is_no_model_reply
    ):
        return None
    chunk_id = message_chunk_id(message.id)
    existing = MemoryItem.objects.filter(chunk_id=chunk_id).first()
    if existing is not None:
        return PendingItem(existing=existing)
    previous = list(
        Message.objects.filter(
            session_id=message.session_id, id__lt=message.id, role__in=INDEXED_ROLES
        )
        .exclude(content_sanitized="")
        .only("id", "role", "content_sanitized", "metadata")
        .order_by("-id")[: 2 * CONTEXT_WINDOW]
    )
    previous.reverse()
    window = [*previous, message]
    content = message_line(message)
    date_label = message_date_label(message.created_at)
    embedding_text = message_embedding_text(
        date_label=date_label,
        line=content,
        previous_line=message_line(previous[-1]) if previous else "",
    )

    def store(embedding: list[float] | None) -> MemoryItem | None:
        return _message_item_store(
            message=message,
            window=window,
            content=content,
            header=date_label,
            embedding=embedding,
            embedding_text=embedding_text,
        )

    return PendingItem(embedding_text=embedding_text, store=store)


def _message_item_store(
    *,
    message: Message,
    window: list[Message],
    content: str,
    header: str,
    embedding,
    embedding_text: str,
) -> MemoryItem | None:
    session = message.session
    chunk_id = message_chunk_id(message.id)
    speaker, _ = message_speaker(message)
    try:
        with transaction.atomic():
            item = memory_item_create(
                with_entities=False,  # pending_items_store extracts the reply's items at once
                scope=MemoryScope.of_session(session),
                source=MemoryItem.Source.CHUNK,
                content=content,
                header=header,
                keyword_context=_context_of(window, len(window) - 1),
                embedding=embedding,
                embedding_text=embedding_text,
                metadata={
                    "granularity": GRANULARITY,
                    "speaker": speaker,
                    "role": message.role,
                    "position": _position(message=message, previous=window[:-1]),
                    "message_id": message.id,
                    "session_id": str(session.id),
                },
                chunk_id=chunk_id,
                source_message_ids=[message.id],
                occurred_at=message.created_at,
            )
    except IntegrityError:
        # The same message indexed concurrently: the first writer's item stands.
        return MemoryItem.objects.filter(chunk_id=chunk_id).first()

    # The previous CONTEXT_WINDOW items now have this message among their next neighbours.
    for index in range(max(0, len(window) - 1 - CONTEXT_WINDOW), len(window) - 1):
        MemoryItem.objects.filter(chunk_id=message_chunk_id(window[index].id)).update(
            keyword_context=_context_of(window, index)
        )
    return item


def _position(*, message: Message, previous: list[Message]) -> int:
    """Ordinal of the message among the session's indexed messages (0-based)."""
    if previous:
        before = (
            MemoryItem.objects.filter(chunk_id=message_chunk_id(previous[-1].id))
            .values_list("metadata__position", flat=True)
            .first()
        )
        if isinstance(before, int):
            return before + 1
    return (
        Message.objects.filter(
            session_id=message.session_id, id__lt=message.id, role__in=INDEXED_ROLES
        )
        .exclude(content_sanitized="")
        .count()
    )
