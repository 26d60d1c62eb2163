"""Chat-export imports: the job, its per-file manifest, and the ledger of imported pairs.

`ImportFile` is the reference's processing manifest, one row per file (archive members get
their own rows): content hash, size, format, processed_at, the chunk ids written and the
errors. `ImportedConversation` remembers which turn pairs of a conversation are already
stored, so importing a changed export adds only its new pairs.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class ImportJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        # Some files failed (each file row says why), the others were imported or skipped.
        PARTIAL = "partial"
        FAILED = "failed"

    class Origin(models.TextChoices):
        API = "api"
        CLI = "cli"
        ADMIN = "admin"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="import_jobs"
    )
    app_id = models.CharField(max_length=64, default="default")
    project_id = models.CharField(max_length=128, blank=True, default="")
    # Frontmatter agent_id: "external" for raw commercial exports (reference default).
    agent_id = models.CharField(max_length=128, default="external")
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.API)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    # Directory holding the uploaded bytes until processed (removed afterwards); empty for CLI.
    upload_dir = models.CharField(max_length=500, blank=True, default="")
    summary = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    # The worker's lease, renewed while it runs the job; once it runs out another worker may
    # take over (memory_site.leases).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "import_job"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "-created_at"], name="import_job_user_recent")]

    def __str__(self) -> str:
        return f"import {self.id} ({self.status})"


class ImportFile(models.Model):
    # What a person or client is shown about one imported file (API, admin, pages).
    REPORT_FIELDS = (
        "name",
        "format",
        "status",
        "conversations",
        "turn_pairs",
        "chunks_written",
        # Chunks whose entities are extracted so far (a backfill after the import).
        "entities_extracted",
        # Passages still waiting for their vectors (embedded after the import).
        "passage_vectors_pending",
        "duplicates_skipped",
        "size_bytes",
        "content_hash",
        "error",
        "processed_at",
    )

    class Status(models.TextChoices):
        PENDING = "pending"
        IMPORTED = "imported"
        SKIPPED = "skipped"
        FAILED = "failed"

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="files")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="import_files"
    )
    # Archive members point at their archive; an archive row itself is a container only.
    archive = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="members"
    )
    is_archive = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)
    # Display name: the uploaded name, or "archive.zip/inner/path.json" for a member.
    name = models.CharField(max_length=1000)
    # Where the bytes are on disk while pending (upload copy, extracted member or CLI path).
    path = models.CharField(max_length=1000, blank=True, default="")
    size_bytes = models.BigIntegerField(default=0)
    content_hash = models.CharField(max_length=64, blank=True, default="")
    format = models.CharField(max_length=32, blank=True, default="")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    conversations = models.PositiveIntegerField(default=0)
    turn_pairs = models.PositiveIntegerField(default=0)
    chunks_written = models.PositiveIntegerField(default=0)
    duplicates_skipped = models.PositiveIntegerField(default=0)
    chunk_ids = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    # How many of ``chunk_ids`` (in order) the entity backfill has read: entities are extracted
    # after the file's transaction, in batches, and a backfill resumes from here.
    entities_extracted = models.PositiveIntegerField(default=0)
    # The file's passages were stored without vectors, which a task after the import fills in
    # (imports_app.services.passage_vectors); False once every one has its vector.
    passage_vectors_pending = models.BooleanField(default=False)
    # When that task last wrote a batch: one that stops for PASSAGE_VECTORS_STALE_AFTER is
    # queued again (its worker died), one still writing is left alone.
    passage_vectors_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    processed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "import_file"
        ordering = ["job", "position", "id"]
        indexes = [
            models.Index(fields=["user", "content_hash"], name="import_file_user_hash"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class ImportedConversation(models.Model):
    """Which pairs of one source conversation are stored, as ``index:fingerprint`` keys."""

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="imported_conversations"
    )
    # Hash of owner, platform and source conversation id (the key inside chunk ids).
    conversation_key = models.CharField(max_length=32)
    platform = models.CharField(max_length=16)
    conversation_id = models.CharField(max_length=255, blank=True, default="")
    title = models.CharField(max_length=500, blank=True, default="")
    pair_keys = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    last_file = models.ForeignKey(
        ImportFile, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "imported_conversation"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "conversation_key"], name="imported_conversation_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.platform}:{self.conversation_id} ({len(self.pair_keys)} pairs)"
