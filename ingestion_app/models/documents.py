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


class DocumentIngestJob(models.Model):
    """One POST /knowledge/ingest: validated in the request, run by a task worker.

    The payload (text or file bytes) waits in ``payload_path`` under the upload folder and is
    deleted when the job ends. ``chunks_done``/``chunks_total`` are the progress; a DELETE
    sets ``cancelled`` and the worker stops at the next batch.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="document_ingest_jobs"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    # The request's validated fields except the payload (filename, mime type, options, scope).
    params = models.JSONField(default=dict, blank=True)
    payload_path = models.CharField(max_length=500, blank=True, default="")
    payload_bytes = models.BigIntegerField(default=0)
    is_file = models.BooleanField(default=False)
    chunks_done = models.PositiveIntegerField(default=0)
    chunks_total = models.PositiveIntegerField(default=0)
    document = models.ForeignKey(
        Document, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # False when the same text and options were ingested before (the existing document).
    created_document = models.BooleanField(default=False)
    error_code = models.CharField(max_length=64, blank=True, default="")
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "document_ingest_job"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="ingest_job_user_recent"),
            models.Index(fields=["status", "heartbeat_at"], name="ingest_job_status_lease"),
        ]

    def __str__(self) -> str:
        return f"ingest {self.id} ({self.status})"
