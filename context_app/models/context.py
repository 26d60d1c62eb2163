"""The context pack's configuration and its audit trail.

- `ContextSettings`: the one row of tunables (caps, thresholds, cadence, verbose logging),
  edited in admin and read on every turn, so a change applies without a restart.
- `OptOut`: users whose chats get no augmentation (plus `MNEMO_OPT_OUT_USERNAMES`).
- `TopicSummary`: per-user topic digests (title, summary, TTL) folded from session summaries.
- `TopicOverride`: an admin's choice of topic for a user or one session; wins over inference.
- `InjectionLog`: one row per prepared pack (built, reused or failed): what went into the prompt
  of a reply and why, down to the ids and scores of the memories it carried.
"""

from __future__ import annotations

import copy
import time

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import connection, models
from django.db.models import Q
from django.db.models.signals import post_delete, post_save
from django.utils import timezone
from django.utils.text import slugify

from memory_site.raw_reads import raw_first


class ContextSettings(models.Model):
    """Tunables of the context pack: a singleton (pk=1), edited with `load()` and read per
    turn with `current()`.

    A turn's read costs ~1.2 ms of its time to first token (bench/proxy.py), so `current()`
    keeps the row in the process for CACHE_SECONDS: an edit applies at once in the process
    that saved it and within that time in every other process (web nodes, task workers).
    """

    SINGLETON_ID = 1
    CACHE_SECONDS = 2.0

    augmentation_enabled = models.BooleanField(
        default=True, help_text="Master switch: off means no context pack for anyone."
    )
    verbose_logging = models.BooleanField(
        default=False,
        help_text="Log every prepared context (turn, pack length, topic, elapsed). Off: nothing per turn.",
    )
    min_user_turns = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="A pack is built from the Nth user message of a session on (the current one counts).",
    )
    # --- Caps ------------------------------------------------------------------------------
    total_cap_chars = models.PositiveIntegerField(
        default=3000,
        validators=[MinValueValidator(200), MaxValueValidator(50_000)],
        help_text="Hard cap on the whole system message, never exceeded.",
    )
    recent_cap_chars = models.PositiveIntegerField(
        default=800, help_text="[Recent context] segment cap."
    )
    history_cap_chars = models.PositiveIntegerField(
        default=600, help_text="[Long-term history] segment cap."
    )
    topic_cap_chars = models.PositiveIntegerField(
        default=600, help_text="[Topic: ...] segment cap."
    )
    memories_cap_chars = models.PositiveIntegerField(
        default=1200, help_text="[Relevant memories] segment cap."
    )
    profile_cap_chars = models.PositiveIntegerField(
        default=600,
        validators=[MaxValueValidator(10_000)],
        help_text="[Profile] segment cap: standing instructions, preferences, who the user is. "
        "Shown first and the last to give way to the total cap; 0 leaves the profile out.",
    )
    max_context_share = models.FloatField(
        default=0.35,
        validators=[MinValueValidator(0.05), MaxValueValidator(0.9)],
        help_text="The pack may use at most this share of the turn's estimated tokens "
        "(pack + conversation + attachments + reply reserve).",
    )
    reply_reserve_tokens = models.PositiveIntegerField(
        default=1500, help_text="Tokens assumed for the reply when estimating a turn's budget."
    )
    attachment_cap_chars = models.PositiveIntegerField(
        default=15_000,
        help_text="Inline attachment text across all files; larger files are referenced by name.",
    )
    # --- Relevant memories -------------------------------------------------------------------
    memory_top_k = models.PositiveSmallIntegerField(default=6, validators=[MaxValueValidator(50)])
    memory_min_similarity = models.FloatField(
        default=0.35,
        validators=[MinValueValidator(-1.0), MaxValueValidator(1.0)],
        help_text=(
            "Cosine similarity a stored memory needs to the current turn to be included when "
            "it shares no word with it (a memory found by its words needs none)."
        ),
    )
    memory_recency_half_life_days = models.FloatField(
        default=30.0,
        validators=[MinValueValidator(0.0)],
        help_text="0 disables the recency weight.",
    )
    # --- Topics ------------------------------------------------------------------------------
    topic_keyword_turns = models.PositiveSmallIntegerField(
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(20)],
        help_text="How many user turns (first ones for inference, latest ones for drift) give keywords.",
    )
    topic_score_threshold = models.FloatField(
        default=0.25, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    topic_drift_margin = models.FloatField(
        default=0.1,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="A new topic replaces the current one only when it scores this much higher.",
    )
    topic_summary_ttl_hours = models.PositiveIntegerField(
        default=24, validators=[MinValueValidator(1)]
    )
    # --- Refresh cadence ---------------------------------------------------------------------
    refresh_every_turns = models.PositiveSmallIntegerField(
        default=2,
        validators=[MinValueValidator(1)],
        help_text="Rebuild the pack every K user turns (otherwise the last one is reused).",
    )
    refresh_every_minutes = models.PositiveIntegerField(
        default=10, help_text="... or when the last build is older than T minutes."
    )
    refresh_cooldown_seconds = models.PositiveIntegerField(
        default=10, help_text="Never rebuild more often than this (topic overrides excepted)."
    )
    latency_budget_ms = models.PositiveIntegerField(
        default=300,
        validators=[MinValueValidator(10)],
        help_text=(
            "A build that would run past this leaves parts out (the vector search, then the "
            "known entities) rather than the pack."
        ),
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "context settings"
        verbose_name_plural = "context settings"

    def __str__(self) -> str:
        return "Context settings"

    def save(self, *args, **kwargs):
        self.pk = self.SINGLETON_ID
        super().save(*args, **kwargs)

    @classmethod
    def load(cls) -> ContextSettings:
        """The settings row, created with the defaults on first use."""
        # Plain SQL first: turns read the row (see `current`).
        instance = raw_first(
            cls, f"SELECT * FROM {cls._meta.db_table} WHERE id = %s", [cls.SINGLETON_ID]
        )
        if instance is None:
            instance, _ = cls.objects.get_or_create(pk=cls.SINGLETON_ID)
        return instance

    @classmethod
    def current(cls) -> ContextSettings:
        """The settings as of at most CACHE_SECONDS ago (a copy: callers may adjust it).

        Inside a transaction the row is read, not cached: what a transaction reads (a test's,
        one that edits the row) may be rolled back.
        """
        if connection.in_atomic_block:
            return cls.load()
        cached = _settings_cache.get("row")
        now = time.monotonic()
        if cached is None or now - cached[0] > cls.CACHE_SECONDS:
            cached = (now, cls.load())
            _settings_cache["row"] = cached
        return copy.copy(cached[1])


# ContextSettings.current()'s row and when it was read; cleared by every save in this process.
_settings_cache: dict[str, tuple[float, ContextSettings]] = {}


def _settings_changed(**kwargs) -> None:
    _settings_cache.clear()


post_save.connect(_settings_changed, sender=ContextSettings)
post_delete.connect(_settings_changed, sender=ContextSettings)


class OptOut(models.Model):
    """A user whose chats are never augmented with stored context (their memories stay stored)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="context_opt_out"
    )
    reason = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "context opt-out"

    def __str__(self) -> str:
        return f"opt-out: {self.user}"


def topic_key(text: str) -> str:
    """The stable key of a topic: lowercase kebab-case (the form session tags use)."""
    return slugify(text)[:64].strip("-")


class TopicSummary(models.Model):
    """A digest of what a user discussed about one topic, rebuilt when missing or expired."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="topic_summaries"
    )
    app_id = models.CharField(max_length=64, default="default")
    key = models.CharField(max_length=64)
    title = models.CharField(max_length=200)
    summary = models.TextField(blank=True, default="")
    # Sessions whose summaries were folded into this digest, newest first.
    source_session_ids = models.JSONField(default=list, blank=True)
    built_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        verbose_name = "topic summary"
        verbose_name_plural = "topic summaries"
        ordering = ["-built_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "app_id", "key"], name="topic_summary_unique")
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.user})"

    @property
    def expired(self) -> bool:
        return self.expires_at <= timezone.now()


class TopicOverride(models.Model):
    """An admin-chosen topic for all of a user's sessions (session empty) or for one session.

    Precedence: session override, then user override, then inference.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="topic_overrides"
    )
    session = models.ForeignKey(
        "sessions_app.ChatSession",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="topic_overrides",
        help_text="Empty: applies to every session of the user.",
    )
    title = models.CharField(max_length=200)
    key = models.CharField(
        max_length=64, blank=True, help_text="Derived from the title when empty."
    )
    note = models.CharField(max_length=200, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user"],
                condition=Q(session__isnull=True),
                name="topic_override_one_per_user",
            ),
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(session__isnull=False),
                name="topic_override_one_per_session",
            ),
        ]

    def __str__(self) -> str:
        scope = f"session {self.session_id}" if self.session_id else "all sessions"
        return f"{self.title} for {self.user} ({scope})"

    def clean(self):
        if self.session_id and self.user_id and self.session.user_id != self.user_id:
            raise ValidationError({"session": "The session belongs to another user."})
        if not topic_key(self.key or self.title):
            raise ValidationError({"title": "The title needs at least one letter or digit."})

    def save(self, *args, **kwargs):
        if self.session_id and not self.user_id:
            self.user_id = self.session.user_id
        self.key = topic_key(self.key or self.title)
        super().save(*args, **kwargs)


class InjectionLog(models.Model):
    """What went into the prompt of one reply, and why (one row per prepared turn).

    `pack_text` is built only from redacted text, so it is safe to show to an admin.
    """

    class Status(models.TextChoices):
        BUILT = "built"
        REUSED = "reused"
        FAILED = "failed"

    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(
        "sessions_app.ChatSession", on_delete=models.CASCADE, related_name="injection_logs"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="injection_logs"
    )
    user_message = models.ForeignKey(
        "sessions_app.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    assistant_message = models.ForeignKey(
        "sessions_app.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    turn_number = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices)
    # Why the pack was (re)built or reused: first_build, every_k_turns, every_t_minutes,
    # topic_changed, override_changed, cadence_not_due, cooldown, database_error, error...
    reason = models.CharField(max_length=64)
    error = models.TextField(blank=True, default="")
    pack_text = models.TextField(blank=True, default="")
    pack_hash = models.CharField(max_length=64, blank=True, default="")
    pack_chars = models.PositiveIntegerField(default=0)
    pack_tokens = models.PositiveIntegerField(default=0)
    # [{"name", "chars", "truncated"}] in pack order.
    segments = models.JSONField(default=list, blank=True)
    # [{"id", "source", "score", "similarity"}] of the memories the pack carried.
    memories = models.JSONField(default=list, blank=True)
    topic_key = models.CharField(max_length=64, blank=True, default="")
    topic_title = models.CharField(max_length=200, blank=True, default="")
    topic_score = models.FloatField(null=True, blank=True)
    # inferred, session_override or user_override; empty when the pack has no topic.
    topic_source = models.CharField(max_length=32, blank=True, default="")
    elapsed_ms = models.FloatField(default=0.0)
    embedding_ms = models.FloatField(default=0.0)
    # The parts left out to stay within the latency budget (ContextPack.skipped).
    skipped = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["session", "-id"], name="injection_session_recent")]

    def __str__(self) -> str:
        return f"{self.status} pack #{self.id} (session {self.session_id}, turn {self.turn_number})"
