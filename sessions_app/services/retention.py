"""Retention: the messages of long-inactive sessions are deleted for real, memories stay.

What a purge removes: every `Message` row of a session whose `last_activity_at` is older than
`MNEMO_RETENTION_DAYS` (and whatever cascades from those rows), plus the encrypted original text
(`EncryptedTextField` columns) of any other row tied to that session, such as the rag_store
turn-pair chunks made from those messages. What it keeps: the session row itself (marked with
`messages_purged_at`), its summary and tags, the sanitized memories and chunks with their
embeddings (they are the long-term memory the product exists for), and the usage logs.

The models tied to a session are discovered through the app registry (any model with a foreign
key to `ChatSession`), so this ground-floor module never imports a higher app and rows added by
later apps are covered without changes here.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.apps import apps
from django.conf import settings
from django.db import models, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from memory_site.crypto import EncryptedTextField
from sessions_app.models import ChatSession, Message, RetentionLog

logger = logging.getLogger(__name__)

RETENTION_BATCH_SIZE = 200


@dataclass
class RetentionReport:
    cutoff: datetime
    retention_days: int
    sessions_purged: int = 0
    messages_deleted: int = 0
    raw_texts_cleared: int = 0
    # Rows removed per model label, cascades included.
    deleted: dict[str, int] = field(default_factory=dict)
    session_ids: list[str] = field(default_factory=list)
    log_id: int | None = None

    def as_dict(self) -> dict:
        return {
            "cutoff": self.cutoff.isoformat(),
            "retention_days": self.retention_days,
            "sessions_purged": self.sessions_purged,
            "messages_deleted": self.messages_deleted,
            "raw_texts_cleared": self.raw_texts_cleared,
            "deleted": dict(self.deleted),
            "log_id": self.log_id,
        }


def _session_linked_encrypted_fields() -> list[tuple[type[models.Model], str, list[models.Field]]]:
    """(model, FK-to-session name, encrypted fields) for every model other than Message."""
    found = []
    for model in apps.get_models():
        if model is Message or model._meta.proxy:
            continue
        encrypted = [f for f in model._meta.concrete_fields if isinstance(f, EncryptedTextField)]
        if not encrypted:
            continue
        for fk in model._meta.concrete_fields:
            if fk.is_relation and fk.related_model is ChatSession:
                found.append((model, fk.name, encrypted))
    return found


def _clear_raw_text(*, session_ids: list) -> int:
    """Blank the encrypted original text of rows tied to these sessions; returns rows changed."""
    cleared = 0
    for model, fk_name, encrypted in _session_linked_encrypted_fields():
        has_text = Q()
        for column in encrypted:
            has_text |= Q(**{f"{column.name}__isnull": False}) & ~Q(**{column.name: ""})
        rows = model._base_manager.filter(**{f"{fk_name}__in": session_ids}).filter(has_text)
        blank = {column.name: None if column.null else "" for column in encrypted}
        cleared += rows.update(**blank)
    return cleared


def retention_candidates(*, cutoff: datetime):
    """Sessions inactive since before `cutoff` that still hold messages, oldest first."""
    return (
        ChatSession.objects.filter(last_activity_at__lt=cutoff)
        .filter(Exists(Message.objects.filter(session_id=OuterRef("pk"))))
        .order_by("last_activity_at")
    )


def retention_purge(
    *,
    now: datetime | None = None,
    retention_days: int | None = None,
    batch_size: int = RETENTION_BATCH_SIZE,
) -> RetentionReport:
    """Delete the messages of sessions inactive for more than `retention_days` (default setting).

    Idempotent: a second run finds nothing left to purge. Works in batches, each its own
    transaction; a batch locks its session rows (skipping rows another worker holds) and checks
    the cutoff again under the lock, so a message written meanwhile keeps its session. Always
    writes one `RetentionLog` row, even when nothing was due, so every run is accounted for.
    A retention of 0 days or less disables the purge (nothing is deleted, nothing is logged).
    """
    now = now or timezone.now()
    days = settings.MNEMO_RETENTION_DAYS if retention_days is None else retention_days
    report = RetentionReport(cutoff=now - timedelta(days=max(days, 0)), retention_days=max(days, 0))
    if days <= 0:
        return report
    deleted: Counter[str] = Counter()
    candidate_ids = list(retention_candidates(cutoff=report.cutoff).values_list("id", flat=True))
    for start in range(0, len(candidate_ids), batch_size):
        batch = candidate_ids[start : start + batch_size]
        with transaction.atomic():
            locked = list(
                ChatSession.objects.select_for_update(skip_locked=True)
                .filter(id__in=batch, last_activity_at__lt=report.cutoff)
                .values_list("id", flat=True)
            )
            if not locked:
                continue
            report.raw_texts_cleared += _clear_raw_text(session_ids=locked)
            _total, per_model = Message.objects.filter(session_id__in=locked).delete()
            deleted.update(per_model)
            ChatSession.objects.filter(id__in=locked).update(messages_purged_at=now)
        report.sessions_purged += len(locked)
        report.session_ids.extend(str(session_id) for session_id in locked)
    report.deleted = {label: count for label, count in sorted(deleted.items()) if count}
    report.messages_deleted = report.deleted.get(Message._meta.label, 0)
    log = RetentionLog.objects.create(
        ran_at=now,
        cutoff=report.cutoff,
        retention_days=report.retention_days,
        sessions_purged=report.sessions_purged,
        messages_deleted=report.messages_deleted,
        raw_texts_cleared=report.raw_texts_cleared,
        deleted=report.deleted,
        session_ids=report.session_ids,
    )
    report.log_id = log.id
    logger.info(
        "retention: %s sessions purged, %s messages deleted, %s raw texts cleared (cutoff %s)",
        report.sessions_purged,
        report.messages_deleted,
        report.raw_texts_cleared,
        report.cutoff.isoformat(),
    )
    return report
