"""Ingested documents (rag-pipeline.txt): the parent of document chunks in the rag_store.

The chunks themselves are `MemoryItem` rows with source ``document``; each carries
``metadata.document_id`` plus its index, offsets and strategy.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class Document(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="documents"
    )
    app_id = models.CharField(max_length=64, default="default")
    project_id = models.CharField(max_length=128, blank=True, default="")
    agent_id = models.CharField(max_length=128, blank=True, default="")
    title = models.CharField(max_length=500, blank=True, default="")
    filename = models.CharField(max_length=500, blank=True, default="")
    mime_type = models.CharField(max_length=100, blank=True, default="text/plain")
    # Hash of the extracted text and the chunking options: the same ingest twice is one document.
    content_hash = models.CharField(max_length=64)
    text_length = models.PositiveIntegerField(default=0)
    strategy = models.CharField(max_length=16, default="paragraph")
    options = models.JSONField(default=dict, blank=True)
    chunk_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "document"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "content_hash"], name="document_user_hash")]

    def __str__(self) -> str:
        return self.title or self.filename or str(self.id)
