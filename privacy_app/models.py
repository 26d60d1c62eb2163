"""Who looked at another user's memories, sessions or imports, and when.

Staff holding `privacy_app.browse_all_memories` may browse any user's data in the memory
browser; every page they open on someone else's data writes one `AccessLog` row, so the
exception to "users see only their own data" is always accounted for.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AccessLog(models.Model):
    """One page view of another user's data by a staff member with the browse permission.

    The viewer's username is copied so the row still says who looked after the account is
    gone; the row goes with the target user (it describes their data).
    """

    id = models.BigAutoField(primary_key=True)
    viewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="access_logs_as_viewer",
    )
    viewer_username = models.CharField(max_length=150)
    target_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_logs_as_target"
    )
    # What was looked at: memory_list, memory, session_list, session, import_list, import.
    object_type = models.CharField(max_length=32)
    object_id = models.CharField(max_length=64, blank=True, default="")
    path = models.CharField(max_length=500)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        # The table keeps the name it was created with in context_app (moved by state only).
        db_table = "context_app_accesslog"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["target_user", "-created_at"], name="access_log_target_recent"),
            models.Index(fields=["viewer", "-created_at"], name="access_log_viewer_recent"),
        ]
        permissions = [
            (
                "browse_all_memories",
                "Can browse every user's memories, sessions and imports (each view is logged)",
            )
        ]

    def __str__(self) -> str:
        what = f"{self.object_type} {self.object_id}".strip()
        return f"{self.viewer_username} viewed {what} of user {self.target_user_id}"
