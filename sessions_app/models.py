"""Chat sessions, their messages and usage: the ground floor every other app builds on."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory_site.crypto import EncryptedTextField


class ChatSession(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        CLOSING = "closing"
        CLOSED = "closed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions"
    )
    app_id = models.CharField(max_length=64, default="default")
    agent_id = models.CharField(max_length=128, blank=True, default="")
    project_id = models.CharField(max_length=128, blank=True, default="")
    title = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    visible = models.BooleanField(default=True)
    opened_at = models.DateTimeField(default=timezone.now)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Any write (message, heartbeat, visibility) moves this; retention and stale-close read it.
    last_activity_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)
    close_error = models.TextField(blank=True, default="")
    close_attempts = models.PositiveIntegerField(default=0)
    messages_purged_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-opened_at"]
        indexes = [
            models.Index(fields=["user", "app_id", "-opened_at"], name="session_user_recent"),
            models.Index(fields=["status", "last_activity_at"], name="session_status_activity"),
        ]

    def __str__(self) -> str:
        return f"{self.title or 'Untitled'} ({self.id})"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        SYSTEM = "system"

    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_messages"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    # The original text, encrypted at rest; never sent to a model or an index.
    content = EncryptedTextField()
    # PII-redacted copy: the only text that reaches LLMs, embedders, search and context packs.
    content_sanitized = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    model = models.CharField(max_length=128, blank=True, default="")
    # A streamed reply cut short by a disconnect or a model failure.
    incomplete = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "id"], name="message_session_id")]

    def __str__(self) -> str:
        return f"{self.role} #{self.id}"

    @property
    def is_no_model_reply(self) -> bool:
        """A reply the offline provider wrote because no model is configured: it says so and
        echoes the context, so it holds nothing worth summarizing or indexing."""
        return self.role == self.Role.ASSISTANT and self.model == "local"


class UsageLog(models.Model):
    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(
        ChatSession, on_delete=models.SET_NULL, null=True, blank=True, related_name="usage_logs"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="usage_logs"
    )
    app_id = models.CharField(max_length=64, default="default")
    kind = models.CharField(
        max_length=32, default="chat"
    )  # chat, summary, facts, header, embedding
    model = models.CharField(max_length=128)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "created_at"], name="usage_user_date")]


class RetentionLog(models.Model):
    """One row per retention run: what was deleted, so a purge can be accounted for later.

    Holds counts and the ids of purged sessions only (no text, no user reference), so it can be
    kept after the data it describes is gone; erasure removes an erased user's session ids.
    """

    id = models.BigAutoField(primary_key=True)
    ran_at = models.DateTimeField(default=timezone.now)
    cutoff = models.DateTimeField()
    retention_days = models.PositiveIntegerField()
    sessions_purged = models.PositiveIntegerField(default=0)
    messages_deleted = models.PositiveIntegerField(default=0)
    raw_texts_cleared = models.PositiveIntegerField(default=0)
    # Every row removed, by model label, including cascades ({"sessions_app.Message": 12}).
    deleted = models.JSONField(default=dict, blank=True)
    session_ids = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-ran_at"]

    def __str__(self) -> str:
        return f"retention {self.ran_at:%Y-%m-%d %H:%M}: {self.sessions_purged} sessions"
