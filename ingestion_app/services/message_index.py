"""Message items: every user/assistant message becomes its own retrievable rag_store row.

Why one item per message (measured on LoCoMo; bench/RESULTS.md): a question is
usually answered by one line of a conversation, and short items let ~11 answers fit in a 2,000
character budget where turn pairs fit half as many (79% evidence recall against 75%). The words
a question uses often sit in the neighbouring messages (the other speaker's question, the
follow-up), so the two messages before and after are indexed with the item at half weight
(`keyword_context`, weight B of the search vector) without being returned; the embedding
covers the message and the one before it.

Rows are chunks (`source="chunk"`) with `metadata["granularity"] == "message"`, the speaker
(`message.metadata["speaker"]` when the client names one, else the role), the message's
position in its session (neighbour smoothing in the search) and its id. The chunk id
``msg-<message id>`` (``msg-<message id>-p<n>`` for later passages) makes the hook idempotent
and lets the next message find the rows whose keyword context it completes.

A long message (over PASSAGE_WHOLE_MAX_CHARS, typically an assistant reply) is stored as
passages of a few sentences instead of one item (see `message_items_prepare` for why); each
passage carries the message's header (date, speaker, chat), keyword context and embedding of
the previous message, so it stands on its own, and points back to its message. What is not
indexed at all is decided by `memory_text_indexable` (mnemo_text.indexable; the rule
is described in ingestion_app.services.memory_store).
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from ingestion_app.chunking.markdown import conversation_key
from ingestion_app.models import MemoryItem
from ingestion_app.services.item_entities import text_entity_types
from ingestion_app.services.memory_store import (
    MemoryScope,
    exchange_key,
    keyword_context_with_categories,
    memory_item_create,
    memory_provenance,
)
from ingestion_app.services.pending_items import PendingItem, pending_items_store
from mnemo_text.indexable import memory_text_indexable
from mnemo_text.passages import passages_split
from mnemo_text.redaction import redact
from sessions_app.models import Message

GRANULARITY = "message"
LOCAL_PLATFORM = "local"  # a live chat's platform in conversation keys (as inline.PLATFORM)
INDEXED_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)
# Neighbours indexed on each side (measured: +-2 beats +-1 by ~1 point, +-3 adds nothing).
CONTEXT_WINDOW = 2
# One neighbour line never adds more than this to an item's keyword context.
CONTEXT_LINE_CHARS = 1500
# Characters of the previous message embedded with a message (see message_embedding_text).
EMBEDDING_PREVIOUS_CHARS = 300


def message_chunk_id(message_id: int, passage: int = 0) -> str:
    """`msg-<id>` for a message's (first) item, `msg-<id>-p<n>` for its later passages."""
    return f"msg-{message_id}" if passage == 0 else f"msg-{message_id}-p{passage}"


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
    """The keyword context of the items of ``window[index]``: its neighbours' lines, then the
    category words of the message itself (every passage of it shares them)."""
    lo, hi = max(0, index - CONTEXT_WINDOW), index + CONTEXT_WINDOW + 1
    neighbours = "\n".join(
        message_line(neighbour)[:CONTEXT_LINE_CHARS]
        for position, neighbour in enumerate(window[lo:hi], start=lo)
        if position != index
    )
    text = window[index].content_sanitized
    return keyword_context_with_categories(neighbours, text, entity_types=text_entity_types(text))


def message_index(*, message: Message) -> list[MemoryItem]:
    """Store `message` as its message items (embedded on their own); see
    `message_items_prepare`. Returns its items in passage order ([] when it is not indexed)."""
    stored = pending_items_store(message_items_prepare(message=message))
    return [item for item in stored if item is not None]


def message_exchange_key(message: Message) -> str:
    """The exchange a message belongs to: its session and the ordinal of the user prompt that
    opened the exchange (the turn-pair chunk of that exchange has the same key)."""
    pair_number = Message.objects.filter(
        session_id=message.session_id, role=Message.Role.USER, id__lte=message.id
    ).count()
    key = conversation_key(
        namespace=str(message.session.user_id),
        platform=LOCAL_PLATFORM,
        conversation_id=str(message.session_id),
    )
    return exchange_key(conversation_key=key, turn_range=str(pair_number))


def message_header(*, speaker_label: str, date_label: str, title: str) -> str:
    """The line that makes a message item or passage self-contained: when, who, which chat.

    Indexed with the item (questions name dates and chats), never shown in the pack."""
    header = f"{date_label}: {speaker_label}"
    return f"{header} in chat '{' '.join(title.split())[:80]}'" if title.strip() else header


def message_items_prepare(*, message: Message) -> list[PendingItem]:
    """The message items of `message` (one, or one per passage of a long message), ready to
    embed and store.

    Indexes user and assistant messages that say something (`memory_text_indexable`: not a
    greeting, a content-free question, the offline reply or a pack echo); others give [] but
    still join their neighbours' keyword context. A message up to PASSAGE_WHOLE_MAX_CHARS is
    one item; a longer one is cut by `passages_split` into passages of a few sentences, each
    with its header, its offsets and the message id (see ingestion_app.services.memory_store).
    Why these sizes (measured with bench/locomo.py on the LongMemEval and LoCoMo dev files): a
    1,800-character reply as one item filled most of a 2,000-character budget and buried the
    answering sentence; passages of ~450 characters let four or five independent memories fit,
    while LoCoMo turns (~120 characters) stay whole and keep their figures.

    Each new item's keyword context holds the previous CONTEXT_WINDOW messages; storing the
    message adds it to the context of those messages' items (single-row UPDATEs). Idempotent:
    a second run gets the stored items back as `existing`. Without an embedding (embedder
    failure, or deferred past the response: `deferred_embeddings`) the items are stored anyway:
    keyword search finds them at once and the `mnemo-embed-missing` schedule (or `manage.py
    reembed --only-missing`) fills in a vector the embedder failed to give. Holds no lock.
    """
    if message.role not in INDEXED_ROLES or not message.content_sanitized.strip():
        return []
    text = message.content_sanitized.strip()
    indexable = not message.is_no_model_reply and memory_text_indexable(text)
    spans = passages_split(text) if indexable else []
    chunk_ids = [message_chunk_id(message.id, index) for index in range(len(spans))]
    existing = {item.chunk_id: item for item in MemoryItem.objects.filter(chunk_id__in=chunk_ids)}
    if spans and len(existing) == len(spans):
        return [PendingItem(existing=existing[chunk_id]) for chunk_id in chunk_ids]
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
    if not spans:
        # Not a memory, but its words still help find its neighbours.
        _neighbours_update(window)
        return []
    session = message.session
    speaker, speaker_label = message_speaker(message)
    date_label = message_date_label(message.created_at)
    header = message_header(
        speaker_label=speaker_label, date_label=date_label, title=redact(session.title or "")
    )
    shared = {
        "granularity": GRANULARITY,
        "speaker": speaker,
        "role": message.role,
        "position": _position(message=message, previous=window[:-1]),
        "message_id": message.id,
        "session_id": str(session.id),
        "exchange_key": message_exchange_key(message),
        "provenance": memory_provenance(
            source="chat", title=redact(session.title or ""), moment=message.created_at
        ),
    }
    previous_line = message_line(previous[-1]) if previous else ""
    keyword_context = _context_of(window, len(window) - 1)
    pending: list[PendingItem] = []
    for index, (start, end) in enumerate(spans):
        chunk_id = chunk_ids[index]
        if chunk_id in existing:
            pending.append(PendingItem(existing=existing[chunk_id]))
            continue
        content = f"{speaker_label}: {text[start:end]}"
        metadata = dict(shared)
        if len(spans) > 1:
            metadata["passage"] = {
                "index": index,
                "count": len(spans),
                "start": start,
                "end": end,
            }
        embedding_text = message_embedding_text(
            date_label=date_label, line=content, previous_line=previous_line
        )
        last = index == len(spans) - 1

        def store(
            embedding,
            *,
            chunk_id=chunk_id,
            content=content,
            metadata=metadata,
            embedding_text=embedding_text,
            last=last,
            deferred=False,  # embedding None either way: kept findable by keywords
        ) -> MemoryItem | None:
            return _message_item_store(
                message=message,
                window=window if last else None,
                chunk_id=chunk_id,
                content=content,
                header=header,
                keyword_context=keyword_context,
                metadata=metadata,
                embedding=embedding,
                embedding_text=embedding_text,
            )

        pending.append(PendingItem(embedding_text=embedding_text, store=store))
    return pending


def _message_item_store(
    *,
    message: Message,
    window: list[Message] | None,
    chunk_id: str,
    content: str,
    header: str,
    keyword_context: str,
    metadata: dict,
    embedding,
    embedding_text: str,
) -> MemoryItem | None:
    try:
        with transaction.atomic():
            item = memory_item_create(
                with_entities=False,  # pending_items_store extracts the reply's items at once
                scope=MemoryScope.of_session(message.session),
                source=MemoryItem.Source.CHUNK,
                content=content,
                header=header,
                keyword_context=keyword_context,
                categorize=False,  # _context_of added the message's categories
                embedding=embedding,
                embedding_text=embedding_text,
                metadata=metadata,
                chunk_id=chunk_id,
                source_message_ids=[message.id],
                occurred_at=message.created_at,
            )
    except IntegrityError:
        # The same message indexed concurrently: the first writer's item stands.
        return MemoryItem.objects.filter(chunk_id=chunk_id).first()
    if window is not None:
        _neighbours_update(window)
    return item


def _neighbours_update(window: list[Message]) -> None:
    """The previous CONTEXT_WINDOW messages' items (every passage) get the window's last
    message among their next neighbours."""
    for index in range(max(0, len(window) - 1 - CONTEXT_WINDOW), len(window) - 1):
        message_id = window[index].id
        MemoryItem.objects.filter(
            Q(chunk_id=message_chunk_id(message_id))
            | Q(chunk_id__startswith=f"{message_chunk_id(message_id)}-p")
        ).update(keyword_context=_context_of(window, index))


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
