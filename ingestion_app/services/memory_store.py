"""The one place rag_store rows (`MemoryItem`) are built: scope, content hash, token count.

Every writer (message items, inline turn-pair chunks, documents, commit facts, imports, session
summaries, consolidation) goes through `memory_item_build` / `memory_item_create` /
`memory_items_bulk_create` / `memory_items_copy` (COPY for imports), so a new column or rule
is added once. Embeddings: bulk writers embed their built rows with `memory_items_embed`
(batches of EMBEDDING_BATCH_SIZE); the per-reply writers keep their one embedder call for both
items of a reply (`pending_items_store`) and hand the vector in.

What every item says about itself (the read side ranks, collapses and labels with it):

- ``occurred_at``: when the thing was said (the message's time; for an import the original
  message or conversation date, never the import time).
- ``metadata["provenance"]``: where it came from in words a user understands
  (`memory_provenance`): "Chat 'Trip planning', 3 Nov 2026", "Imported from ChatGPT export,
  conversation 'X', 12 Feb 2024", "Document 'handbook.pdf'", "Committed fact".
- ``metadata["exchange_key"]``: one key shared by every item of one exchange (a user turn and
  the reply to it: message items, their passages and the turn-pair chunk), so search and the
  pack give one exchange at most one slot (`exchange_key`).
- a passage of a long message: ``metadata["message_id"]`` and
  ``metadata["passage"] = {"index", "count", "start", "end"}`` (mnemo_text.passages).

What is NOT stored as a memory (`memory_text_indexable`, applied by every conversation writer
where its items are built): text with no information of its own. That is a greeting or an
acknowledgement ("hi", "thanks!", "ok got it"); a short message made only of questions and
filler ("what am I allergic to?": the statement that answers it is the memory, the question
would outrank it on the same words); the offline "no model configured" reply; and any reply
that echoes a context pack. The words of a skipped message still help: they stay in the
keyword context of its neighbours' items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from operator import attrgetter
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import connection, models
from django.utils import timezone

from ingestion_app.models import MemoryItem
from ingestion_app.services.item_entities import (
    bucket_configured,
    bucket_for,
    memory_item_entity_types,
)
from ingestion_app.signals import memory_items_written, store_analyzed
from memory_site.providers import get_embedder
from memory_site.providers.base import ProviderError
from memory_site.tokens import count_tokens
from mnemo_text.accents import accented_words_folded
from mnemo_text.categories import TextCues, category_terms

PLATFORM_NAMES = {
    "chatgpt": "ChatGPT",
    "claude": "Claude",
    "gemini": "Gemini",
    "openwebui": "Open WebUI",
    "api": "API log",
    "local": "Markdown chat log",
}


@dataclass(frozen=True)
class MemoryScope:
    """Who an item belongs to and where search scopes find it."""

    user_id: int
    app_id: str
    project_id: str = ""
    agent_id: str = ""
    chat_session: Any = None  # sessions_app.ChatSession or None
    rag_session_id: str = ""

    @classmethod
    def of_session(
        cls, session, *, project_id: str | None = None, rag_session_id: str = ""
    ) -> MemoryScope:
        """The scope an item written from a chat session inherits (`MemoryItem.session_scope`);
        project_id overrides the session's own (commit files facts under a mapped project)."""
        fields = MemoryItem.session_scope(session)
        if project_id is not None:
            fields["project_id"] = project_id
        return cls(**fields, rag_session_id=rag_session_id)


def memory_date_label(moment: datetime | None) -> str:
    """'3 Nov 2026' (the short date of provenance labels); '' without a date."""
    if moment is None:
        return ""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    return f"{local.day} {local:%b %Y}"


def memory_provenance(
    *,
    source: str,
    title: str = "",
    platform: str = "",
    moment: datetime | None = None,
) -> str:
    """Where an item came from, as a user would say it.

    source: "chat" (a live chat), "import" (a chat export; `platform` names it), "document",
    "fact" or "summary". The title is quoted as given; an empty one reads "untitled".
    """
    date = memory_date_label(moment)
    named = f"'{' '.join(title.split())[:80]}'" if title and title.strip() else ""
    if source == "fact":
        label = "Committed fact"
    elif source == "document":
        label = f"Document {named}" if named else "Document"
    elif source == "import":
        origin = PLATFORM_NAMES.get(platform, platform or "chat")
        label = f"Imported from {origin} export"
        label += f", conversation {named}" if named else ", untitled conversation"
    elif source == "summary":
        label = f"Summary of chat {named}" if named else "Summary of an untitled chat"
    else:
        label = f"Chat {named}" if named else "Untitled chat"
    return f"{label}, {date}" if date and source not in ("fact", "document") else label


def memory_provenance_default(
    *,
    source: str,
    scope: MemoryScope,
    header: str,
    metadata: dict,
    occurred_at: datetime | None,
) -> str:
    """The provenance of an item whose writer did not set one: a committed fact, a document
    (by its title, else file name), a chat's summary or chunk (by the chat's title)."""
    if source == MemoryItem.Source.FACT:
        return memory_provenance(source="fact")
    if source == MemoryItem.Source.DOCUMENT:
        return memory_provenance(source="document", title=metadata.get("filename") or header or "")
    session = scope.chat_session
    title = (getattr(session, "title", "") or "") if session is not None else ""
    moment = occurred_at or (getattr(session, "opened_at", None) if session else None)
    if source == MemoryItem.Source.SUMMARY:
        return memory_provenance(source="summary", title=title, moment=moment)
    if metadata.get("source_platform") not in (None, "", "local") or session is None:
        return memory_provenance(
            source="import",
            platform=metadata.get("source_platform") or "",
            title=metadata.get("conversation_title") or "",
            moment=moment,
        )
    return memory_provenance(source="chat", title=title, moment=moment)


def exchange_key(*, conversation_key: str, turn_range: str) -> str:
    """The key every item of one exchange shares: its conversation and its turn number(s).

    A live chat's conversation key is `conversation_key(namespace=user id, platform="local",
    conversation_id=session id)` and its turn number the user's ordinal prompt, exactly as the
    turn-pair chunk of that exchange names them, so message items, passages and the chunk agree.
    """
    return f"{conversation_key}:{turn_range}"


def memory_content_hash(*, text: str, normalized: bool) -> str:
    """The stored `content_hash` of an item's text. ONE rule per kind of item:

    ======================================  =====================================================
    item                                    content_hash
    ======================================  =====================================================
    fact (commit, add or update)            sha256 of the case-folded text with whitespace runs
                                            collapsed (`normalized=True`): "Lives in Berlin" and
                                            "lives  in berlin" are the same fact
    any item edited by its user             same as a fact (`normalized=True`)
    chunk (turn pair, message, import),     sha256 of the UTF-8 content as stored
    document chunk, summary                 (`normalized=False`)
    ======================================  =====================================================

    Use `memory_content_hash_for` to get the rule of a source.
    """
    if normalized:
        text = " ".join(text.casefold().split())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def memory_content_hash_for(*, source: str, text: str) -> str:
    """`memory_content_hash` with the rule of a newly written item of `source`."""
    return memory_content_hash(text=text, normalized=source == MemoryItem.Source.FACT)


def memory_item_build(
    *,
    scope: MemoryScope,
    source: str,
    content: str,
    header: str = "",
    raw_content: str = "",
    embedding: list[float] | None = None,
    embedding_text: str = "",
    keyword_context: str = "",
    topics: Sequence[str] = (),
    metadata: dict | None = None,
    chunk_id: str | None = None,
    source_message_ids: Sequence[int] = (),
    token_count: int | None = None,
    occurred_at: datetime | None = None,
    created_at: datetime | None = None,
    bucket_from_entities: bool = True,
    categorize: bool = True,
    cues: TextCues | None = None,
) -> MemoryItem:
    """An unsaved MemoryItem with its content hash, token count and bucket filled in.

    token_count defaults to the tokens of `content` (memory_site.tokens.count_tokens); writers
    that already counted the parts (a turn pair's two messages plus its header, an import
    chunk) pass their figure. occurred_at and created_at default to now. Every item gets a
    `metadata["provenance"]`: writers that know more (chats, imports) set it, the others get
    the label of their source (`memory_provenance_default`). The bucket counts the entity
    types of the text (the extractor runs once, its result is reused by `entities_extract`);
    imports pass ``bucket_from_entities=False`` (cue words only, the entity backfill corrects
    the bucket of a chunk later) to keep the extractor out of their transaction. The category
    words of a short item (``mnemo_text.categories``) join its keyword context;
    ``categorize=False`` when the writer's keyword context carries them already (a message
    item's, rewritten as its neighbours arrive: ``message_index``). ``cues``: the bucket cue
    and category words of ``content``, computed already (an import's workers); used only
    without entities.
    """
    metadata = dict(metadata) if metadata is not None else {}
    if not metadata.get("provenance"):
        metadata["provenance"] = memory_provenance_default(
            source=source, scope=scope, header=header, metadata=metadata, occurred_at=occurred_at
        )
    optional: dict[str, Any] = {}
    if occurred_at is not None:
        optional["occurred_at"] = occurred_at
    if created_at is not None:
        optional["created_at"] = created_at
    item = MemoryItem(
        user_id=scope.user_id,
        app_id=scope.app_id,
        project_id=scope.project_id,
        agent_id=scope.agent_id,
        chat_session=scope.chat_session,
        rag_session_id=scope.rag_session_id,
        source=source,
        content=content,
        header=header,
        raw_content=raw_content,
        embedding=embedding,
        embedding_text=embedding_text,
        keyword_context=keyword_context,
        folded_words=accented_words_folded(header, content),
        topics=list(topics),
        metadata=metadata,
        chunk_id=chunk_id,
        content_hash=memory_content_hash_for(source=source, text=content),
        source_message_ids=list(source_message_ids),
        token_count=count_tokens(content) if token_count is None else token_count,
        **optional,
    )
    # Chosen before the insert: an UPDATE afterwards would write every index entry twice.
    if cues is not None and not bucket_from_entities:
        item.bucket = bucket_configured(cues.bucket)
        if categorize:
            item.keyword_context = _keyword_context_joined(keyword_context, cues.category_terms)
        return item
    entity_types = memory_item_entity_types(item) if bucket_from_entities else []
    item.bucket = bucket_for(content, entity_types)
    if categorize:
        item.keyword_context = keyword_context_with_categories(
            keyword_context, content, entity_types=entity_types
        )
    return item


def keyword_context_with_categories(
    keyword_context: str, text: str, *, entity_types: Sequence[str] = ()
) -> str:
    """An item's keyword context followed by the category words of its text (if any)."""
    return _keyword_context_joined(keyword_context, category_terms(text, entity_types=entity_types))


def _keyword_context_joined(keyword_context: str, terms: str) -> str:
    return f"{keyword_context}\n{terms}" if keyword_context and terms else keyword_context or terms


def memory_item_create(
    *,
    scope: MemoryScope,
    source: str,
    content: str,
    with_entities: bool = True,
    **optional: Any,
) -> MemoryItem:
    """`memory_item_build` (same keyword arguments), saved, then its entities extracted
    (``memory_items_written``, on which entities_app extracts; ``with_entities=False`` when the caller extracts a batch itself, as
    `pending_items_store` does for a reply's two items). Runs in the caller's transaction;
    raises IntegrityError on a taken chunk_id (callers that may race keep the first row)."""
    item = memory_item_build(scope=scope, source=source, content=content, **optional)
    item.save(force_insert=True)
    if with_entities:
        memory_items_written.send(sender=MemoryItem, items=[item])
    return item


def memory_items_bulk_create(
    items: Sequence[MemoryItem], *, batch_size: int | None = None
) -> list[MemoryItem]:
    """Insert items built by `memory_item_build` in multi-row INSERTs (ids are set on them),
    then extract their entities in bulk. (Imports use `memory_items_copy`.)"""
    created = MemoryItem.objects.bulk_create(items, batch_size=batch_size)
    memory_items_written.send(sender=MemoryItem, items=created)
    return created


def memory_items_copy(items: Sequence[MemoryItem]) -> None:
    """Insert rag_store rows with COPY: several times cheaper than a multi-row INSERT for
    thousands of chunks. Field values are prepared exactly as ``save()`` prepares them
    (defaults, auto_now, encryption, JSON, arrays, vectors); the generated search vector is
    computed by PostgreSQL. Runs in the caller's transaction. Entities are not extracted here:
    an import extracts them after its transaction (``imports.entity_backfill``)."""
    if not items:
        return
    plain, read_plain, prepared = _copy_columns()
    columns = ", ".join(
        connection.ops.quote_name(f.column) for f in (*plain, *(f for f, _ in prepared))
    )
    table = connection.ops.quote_name(MemoryItem._meta.db_table)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for item in items:
                copy.write_row(
                    [
                        *read_plain(item),
                        *(
                            prepare(field.pre_save(item, True), connection)
                            for field, prepare in prepared
                        ),
                    ]
                )


# Field classes whose value goes to psycopg as it is on the instance (save() would only
# call str()/int() on it): a third of an import's row-building CPU went to their
# get_db_prep_save calls.
_PLAIN_FIELD_CLASSES = (
    models.CharField,
    models.TextField,
    models.PositiveIntegerField,
    models.BigIntegerField,
)


def _copy_field_plain(field: models.Field) -> bool:
    if isinstance(field, models.ForeignKey):
        return True  # the ``<name>_id`` attribute holds the key as stored
    if isinstance(field, ArrayField):
        return type(field.base_field) in _PLAIN_FIELD_CLASSES
    return type(field) in _PLAIN_FIELD_CLASSES


def _copy_prepare(field: models.Field) -> Any:
    """``field.get_db_prep_save``, except that an aware datetime goes to psycopg as it is:
    that is all save() would send for it (the PostgreSQL backend adapts datetimes as they
    are), and the three date columns' calls were a third of the row preparation."""
    prepare = field.get_db_prep_save
    if not isinstance(field, models.DateTimeField):
        return prepare

    def prepare_datetime(value: Any, connection: Any) -> Any:
        if isinstance(value, datetime) and value.tzinfo is not None:
            return value
        return prepare(value, connection)

    return prepare_datetime


@lru_cache(maxsize=1)
def _copy_columns() -> tuple[list[models.Field], Any, list[tuple[models.Field, Any]]]:
    """rag_store's written columns for COPY: the plain ones (read straight off the instance
    in one call) and the others, each with its ``get_db_prep_save`` (encryption, JSON,
    vectors, dates)."""
    fields = [f for f in MemoryItem._meta.concrete_fields if not f.generated and not f.primary_key]
    plain = [f for f in fields if _copy_field_plain(f)]
    prepared = [(f, _copy_prepare(f)) for f in fields if not _copy_field_plain(f)]
    names = [f.attname for f in plain]
    read = attrgetter(*names) if len(names) > 1 else (lambda item: (getattr(item, names[0]),))
    return plain, read, prepared


def memory_item_content_set(
    item: MemoryItem,
    *,
    content: str,
    embedding: list[float] | None,
    embedding_text: str,
) -> None:
    """Replace an item's text in memory (the caller saves): embedding, hash and token count
    follow it (and its folded words). A content change by the user or by a commit update hashes
    like a fact."""
    item.content = content
    item.folded_words = accented_words_folded(item.header, content)
    item.embedding = embedding
    item.embedding_text = embedding_text
    item.content_hash = memory_content_hash(text=content, normalized=True)
    item.token_count = count_tokens(content)


def memory_items_embed(items: Sequence[MemoryItem], *, embedder=None) -> None:
    """Embed ``embedding_text`` (or content) of the items in batches of EMBEDDING_BATCH_SIZE.

    Items with the same text share one vector (embedded once: an import's short prompt and
    its exchange's chunk, a regenerated reply). Raises ProviderError when the embedder fails;
    nothing is written by this function.
    """
    embedder = embedder or get_embedder()
    by_text: dict[str, list[MemoryItem]] = {}
    for item in items:
        by_text.setdefault(item.embedding_text or item.content, []).append(item)
    texts = list(by_text)
    size = max(1, int(settings.EMBEDDING_BATCH_SIZE))
    for start in range(0, len(texts), size):
        window = texts[start : start + size]
        vectors = embedder.embed(window)
        if len(vectors) != len(window):
            raise ProviderError(f"embedder returned {len(vectors)} vectors for {len(window)} texts")
        for text, vector in zip(window, vectors, strict=True):
            for item in by_text[text]:
                item.embedding = vector


def memory_store_vacuum() -> bool:
    """VACUUM (ANALYZE) the memory table after a bulk write (an import); False when skipped.

    Right after a bulk write the first searches pay for it: each fresh row costs its first
    reader a commit-status lookup and a page write (hint bits), index-only scans find no
    visibility map, and the planner's figures that search relies on (the row count and the
    frequent lexemes, `retrieval.scope.table_stats`) are stale until
    autovacuum's next round, which then runs beside those searches. VACUUM cannot run inside
    a transaction: skipped there (tests, callers holding one).
    """
    if connection.in_atomic_block:
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM (ANALYZE) {MemoryItem._meta.db_table}")
    store_analyzed.send(sender=MemoryItem)
    return True
