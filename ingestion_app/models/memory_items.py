"""The rag_store: every retrievable memory item (fact, turn-pair chunk, summary, document chunk).

One table and one HNSW index for all sources keeps retrieval a single fused query.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q
from django.db.models.fields.json import KT
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from memory_site.crypto import EncryptedTextField
from memory_site.tokens import stored_or_counted


class MemoryItem(models.Model):
    class Source(models.TextChoices):
        FACT = "fact"
        CHUNK = "chunk"
        SUMMARY = "summary"
        DOCUMENT = "document"

    id = models.BigAutoField(primary_key=True)
    # No single-column indexes on the two keys: the composite indexes below start with them
    # (rag_user_hash, rag_session_source) and serve their lookups and cascades; each extra
    # index was one more write per row of an import.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="memory_items",
        db_index=False,
    )
    app_id = models.CharField(max_length=64, default="default")
    project_id = models.CharField(max_length=128, blank=True, default="")
    agent_id = models.CharField(max_length=128, blank=True, default="")
    chat_session = models.ForeignKey(
        "sessions_app.ChatSession",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="memory_items",
        db_index=False,
    )
    rag_session_id = models.CharField(max_length=128, blank=True, default="")
    # "role" in the reference: fact | chunk | summary | document.
    source = models.CharField(max_length=16, choices=Source.choices)
    # Sanitized (PII-redacted) text: what is shown, searched and injected into prompts.
    content = models.TextField()
    # Contextual header of a chunk (2-4 sentences) or a document's title; indexed with content.
    header = models.TextField(blank=True, default="")
    # Original unredacted text of imported turns and documents, encrypted at rest.
    raw_content = EncryptedTextField(blank=True, default="")
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    # Exactly the (sanitized) text the embedding was made from, e.g. a chunk's header + user
    # prompt; `manage.py reembed` re-embeds from it after a model switch. Blank = content.
    embedding_text = models.TextField(blank=True, default="")
    # Text indexed for keyword search at half weight (B) and never returned: for a message
    # item, its neighbouring messages, which often hold the words a question uses.
    keyword_context = models.TextField(blank=True, default="")
    # The words of header and content that hold an accented letter, folded ("Zoe Sao" for
    # "Zoë moved to São Paulo"; mnemo_text.accents): indexed with them, so a query
    # folded the same way finds either spelling. Written by the store's writer.
    folded_words = models.TextField(blank=True, default="")
    # The item's own text (header + content + folded words) at weight A, its keyword context at
    # weight B; the BM25 scorer (ingestion_app.selectors.search_candidates) reads the weights to
    # count context words at half tf.
    search_vector = models.GeneratedField(
        expression=SearchVector("header", "content", "folded_words", config="english", weight="A")
        + SearchVector("keyword_context", config="english", weight="B"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    topics = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    # Knowledge bucket (settings.MNEMO_BUCKETS: PERSONAL_LIFE, CREATOR, PROJECTS, OTHER), set
    # when the item's entities are extracted; no choices here so the list stays configurable.
    bucket = models.CharField(max_length=32, blank=True, default="OTHER")
    metadata = models.JSONField(default=dict, blank=True)
    # Stable id of a turn-pair chunk (platform + conversation + pair range); unique when present.
    chunk_id = models.CharField(max_length=255, null=True, blank=True, unique=True)
    content_hash = models.CharField(max_length=64, blank=True, default="")
    source_message_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # cl100k tokens of `content`; 0 = not counted yet (imports): read it through `tokens`.
    token_count = models.PositiveIntegerField(default=0)
    # When the remembered thing happened (message or export timestamp), for recency and date filters.
    occurred_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "rag_store"
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["user", "app_id", "source", "-created_at"], name="rag_user_source_recent"
            ),
            models.Index(fields=["user", "content_hash"], name="rag_user_hash"),
            # Counting a user's items for BM25 (retrieval.scope.scope_stats): entries
            # with equal keys are deduplicated and kept in heap order, so an index-only count
            # reads a few dozen pages where rag_user_source_recent, ordered by date, checks the
            # visibility map once per item.
            models.Index(fields=["user", "app_id", "source"], name="rag_user_app_source"),
            models.Index(fields=["chat_session", "source"], name="rag_session_source"),
            # The rows still without a vector (embedded after the response, or the embedder
            # failed): the one-minute sweep finds them without reading the table.
            models.Index(
                fields=["id"], name="rag_embedding_missing", condition=Q(embedding__isnull=True)
            ),
            models.Index(fields=["user", "app_id", "bucket"], name="rag_user_bucket"),
            GinIndex(fields=["search_vector"], name="rag_search_vector"),
            # The distinct speakers of a user's message items in a few index probes (BM25 on
            # big scopes: a question naming a speaker), instead of reading every item.
            models.Index(
                F("user"),
                F("app_id"),
                KT("metadata__speaker"),
                name="rag_message_speaker",
                condition=Q(metadata__granularity="message"),
            ),
            # ef_construction 128: 64 lost recall against exact search for users with many
            # memories on a big table (bench/scale.py); 128 keeps it at the same index size.
            HnswIndex(
                name="rag_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=128,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source} #{self.id}: {self.content[:60]}"

    @property
    def tokens(self) -> int:
        """The content's token count, counted now if the writer left it at 0 (an import)."""
        return stored_or_counted(self.token_count, self.content)

    @staticmethod
    def session_scope(session) -> dict:
        """The fields an item written from a chat session inherits, so search scopes find it."""
        return {
            "user_id": session.user_id,
            "app_id": session.app_id,
            "project_id": session.project_id,
            "agent_id": session.agent_id,
            "chat_session": session,
        }


class FactHistory(models.Model):
    """Every change to a memory item (add, update, edit, delete) with the reason."""

    class Event(models.TextChoices):
        ADD = "ADD"
        UPDATE = "UPDATE"
        EDIT = "EDIT"
        DELETE = "DELETE"

    memory = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="history")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="fact_history"
    )
    event = models.CharField(max_length=8, choices=Event.choices)
    previous_content = models.TextField(blank=True, default="")
    new_content = models.TextField(blank=True, default="")
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "fact history"
