"""What a session's close leaves behind: its summary and its topic tags, written by
`context_app.services.summaries`.

The tables keep the names they were created with in sessions_app (moved here by state only).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class SessionSummary(models.Model):
    """The mini summary written when a session closes (its searchable copy lives in rag_store)."""

    session = models.OneToOneField(
        "sessions_app.ChatSession", on_delete=models.CASCADE, related_name="summary"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="session_summaries"
    )
    summary = models.TextField()
    token_estimate = models.PositiveIntegerField(default=0)
    model = models.CharField(max_length=128, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "sessions_app_sessionsummary"
        verbose_name = "session summary"
        verbose_name_plural = "session summaries"


class SessionTag(models.Model):
    """A topic tag of a closed session, with the summarizer's confidence."""

    session = models.ForeignKey(
        "sessions_app.ChatSession", on_delete=models.CASCADE, related_name="tags"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="session_tags"
    )
    tag = models.CharField(max_length=64)
    confidence = models.FloatField()

    class Meta:
        db_table = "sessions_app_sessiontag"
        ordering = ["-confidence"]
        constraints = [
            models.UniqueConstraint(fields=["session", "tag"], name="session_tag_unique")
        ]
        indexes = [models.Index(fields=["user", "tag"], name="session_tag_user")]
