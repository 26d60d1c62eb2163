"""User-level rollups of closed sessions and the per-session consolidation bookkeeping.

Both are derived data: a rollup can always be rebuilt from the session summaries, and a
consolidation mark only records which messages have already been folded into long-term memory.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class UserChatSummary(models.Model):
    """One user's "recent" or "history" digest for one app (the reference's user_chat_summaries).

    recent: closed sessions whose last message falls within MNEMO_RECENT_WINDOW_DAYS of the
    user's newest session; history: every older session folded into one digest. Each is capped
    at MNEMO_ROLLUP_MAX_CHARS characters.
    """

    class Kind(models.TextChoices):
        RECENT = "recent"
        HISTORY = "history"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_rollups"
    )
    app_id = models.CharField(max_length=64, default="default")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    summary = models.TextField(blank=True, default="")
    session_count = models.PositiveIntegerField(default=0)
    # Session dates (last message time) of the oldest and newest session folded in.
    period_start = models.DateTimeField(null=True, blank=True)
    period_end = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user_id", "app_id", "kind"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "app_id", "kind"], name="user_chat_summary_unique"
            )
        ]
        verbose_name = "user rollup"

    def __str__(self) -> str:
        return f"{self.kind} rollup of user {self.user_id} ({self.app_id})"


class SessionConsolidation(models.Model):
    """How far a session's messages have been folded into long-term memory.

    Messages with id <= high_water_message_id are covered by consolidation summaries
    (MemoryItem source=summary, metadata.kind=consolidation); only later messages count toward
    MNEMO_CONSOLIDATION_TOKENS. queued_at is the claim that keeps one queued task per session.
    """

    session = models.OneToOneField(
        "sessions_app.ChatSession",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="consolidation",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="session_consolidations"
    )
    high_water_message_id = models.BigIntegerField(default=0)
    consolidations = models.PositiveIntegerField(default=0)
    consolidated_tokens = models.PositiveIntegerField(default=0)
    queued_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"consolidation of {self.session_id} up to message {self.high_water_message_id}"
