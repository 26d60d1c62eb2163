"""The user profile: what must shape every answer, whatever the question.

A standing instruction or a preference is said once and shares no words with the later requests
it governs, so search alone never brings it back; the profile keeps it, with who the user is,
and every context pack carries it first. Each entry remembers where it came from (the message
or memory that stated it) and when it was said; a newer statement of the same thing replaces
the older, which stays as history (`superseded_by`).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class ProfileEntry(models.Model):
    class Kind(models.TextChoices):
        INSTRUCTION = "instruction"
        PREFERENCE = "preference"
        FACT = "fact"

    class Status(models.TextChoices):
        ACTIVE = "active"
        # Replaced by a newer statement of the same thing (`superseded_by`).
        SUPERSEDED = "superseded"
        # Taken back by the user without a replacement ("you no longer need to...").
        WITHDRAWN = "withdrawn"

    class Origin(models.TextChoices):
        CHAT = "chat"
        COMMIT = "commit"
        IMPORT = "import"
        USER = "user"  # added or edited by the user through the API, MCP or the page

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile_entries"
    )
    app_id = models.CharField(max_length=64, default="default")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    # Redacted, as the user said it (an instruction, a preference) or "Label: value" (a fact).
    text = models.TextField()
    # The fact ("home", "family:wife") or instruction slot ("language") the entry fills; a newer
    # entry in the same slot replaces it. Blank: compared by `terms`.
    slot = models.CharField(max_length=128, blank=True, default="")
    # Folded content words without the instruction markers: what the entry is about.
    terms = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    source_message = models.ForeignKey(
        "sessions_app.Message",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    source_memory = models.ForeignKey(
        "ingestion_app.MemoryItem",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    # Message ids the statement came from (a chat message, an import's turns).
    source_message_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # When the user said it: "newer" in the newer-replaces-older rule means this, so an old
    # import never replaces what the user said since.
    stated_at = models.DateTimeField(default=timezone.now)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="replaced"
    )
    superseded_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind", "-stated_at", "-id"]
        indexes = [
            models.Index(fields=["user", "app_id", "status", "kind"], name="profile_user_status"),
        ]
        verbose_name_plural = "profile entries"

    def __str__(self) -> str:
        return f"{self.kind}: {self.text[:60]}"
