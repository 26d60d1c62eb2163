"""Commit to Memory bookkeeping: the per-session high-water mark and the project mapping.

`MemoryCommitLog` is the reference's `memory_commit_log`: the highest message id already
distilled for a chat session, so a message is turned into facts exactly once. Its row is also
the lock concurrent commits of one session queue on. `ProjectContext` is the reference's
`project_contexts`: an admin-managed override of the project a session's facts are filed under.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class MemoryCommitLog(models.Model):
    chat_session = models.OneToOneField(
        "sessions_app.ChatSession", on_delete=models.CASCADE, related_name="commit_log"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_commit_logs"
    )
    # Highest Message.id already distilled; messages above it are "new" for the next commit.
    high_water_mark = models.BigIntegerField(default=0)
    commit_count = models.PositiveIntegerField(default=0)
    # Running totals over all commits of the session.
    facts_committed = models.PositiveIntegerField(default=0)
    facts_updated = models.PositiveIntegerField(default=0)
    duplicates_skipped = models.PositiveIntegerField(default=0)
    last_commit_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_commit_log"
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["user", "-updated_at"], name="commit_log_user_recent")]

    def __str__(self) -> str:
        return f"commit log {self.chat_session_id} @ {self.high_water_mark}"


class ProjectContext(models.Model):
    """Files a chat session's facts under a permanent project, whatever the session says."""

    chat_session = models.OneToOneField(
        "sessions_app.ChatSession", on_delete=models.CASCADE, related_name="project_context"
    )
    # Always the session's owner (set by the admin); kept for per-user browsing and filtering.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_contexts"
    )
    project_id = models.CharField(max_length=128)
    note = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "project_contexts"
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["user", "project_id"], name="project_ctx_user_project")]

    def __str__(self) -> str:
        return f"{self.chat_session_id} -> {self.project_id}"
