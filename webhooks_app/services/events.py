"""Emitting an event: one delivery row per endpoint that takes it, sent after the commit.

Any app calls `event_emit` where the thing happened, inside its own transaction: the rows are
written with it (an event of a write that rolls back is never sent) and the first attempt is
queued only once it commits, never inside the request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.core.exceptions import FieldError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_q.tasks import async_task

from memory_site.task_paths import WEBHOOK_DELIVER_TASK
from webhooks_app.models import WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)

MEMORY_CREATED = "memory.created"
MEMORY_UPDATED = "memory.updated"
MEMORY_DELETED = "memory.deleted"
SESSION_CLOSED = "session.closed"
COMMIT_COMPLETED = "commit.completed"
IMPORT_COMPLETED = "import.completed"
IMPORT_FAILED = "import.failed"
ENTITY_MERGED = "entity.merged"
EVENT_TYPES = (
    MEMORY_CREATED,
    MEMORY_UPDATED,
    MEMORY_DELETED,
    SESSION_CLOSED,
    COMMIT_COMPLETED,
    IMPORT_COMPLETED,
    IMPORT_FAILED,
    ENTITY_MERGED,
)


def _recipients(user_id: int) -> tuple[list[WebhookEndpoint], str]:
    """The enabled endpoints of the user and, when the user is a chat app's end user, of the
    app's key owner; with the end user's id in that app (or ""). One query when there are no
    endpoints (the usual case), two otherwise."""
    try:
        endpoints = list(
            WebhookEndpoint.objects.filter(enabled=True).filter(
                Q(user_id=user_id) | Q(user__end_users__user_id=user_id)
            )
        )
        if not endpoints:
            return [], ""
        external = (
            get_user_model()
            .objects.filter(id=user_id)
            .values_list("end_user_of__external_id", flat=True)
            .first()
        )
    except FieldError:  # no end users in this deployment (gateway_app not installed)
        endpoints = list(WebhookEndpoint.objects.filter(enabled=True, user_id=user_id))
        external = None
    return endpoints, external or ""


def events_emit(*, user_id: int, events: Iterable[tuple[str, dict]]) -> int:
    """Queue each (event, data) for the user's endpoints that take it; returns the deliveries.

    The endpoints are read once for the batch, and `events` (which may be a generator) is not
    consumed when the user has none, so a writer emitting per item pays one query at most.
    """
    endpoints, end_user = _recipients(user_id)
    if not endpoints:
        return 0
    now = timezone.now().isoformat()
    rows = []
    for event, data in events:
        if event not in EVENT_TYPES:
            raise ValueError(f"unknown webhook event {event!r}")
        takers = [e for e in endpoints if not e.events or event in e.events]
        if not takers:
            continue
        payload = {**data, "user_id": user_id, **({"end_user": end_user} if end_user else {})}
        body = json.dumps(
            {"type": event, "timestamp": now, "data": payload},
            ensure_ascii=False,
            separators=(",", ":"),
            default=str,
        )
        rows.extend(WebhookDelivery(endpoint=e, event=event, body=body) for e in takers)
    if not rows:
        return 0
    ids = [str(delivery.id) for delivery in WebhookDelivery.objects.bulk_create(rows)]

    def queue() -> None:
        for delivery_id in ids:
            try:
                async_task(WEBHOOK_DELIVER_TASK, delivery_id, task_name=f"webhook-{delivery_id}")
            except Exception:  # noqa: BLE001 - the minute sweep sends what was not queued
                logger.warning("webhook delivery %s not queued; the sweep sends it", delivery_id)

    transaction.on_commit(queue)
    return len(ids)


def event_emit(*, user_id: int, event: str, data: dict) -> int:
    """Queue one event with `data` (JSON-able) for the user's endpoints; returns how many."""
    if event not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event {event!r}")
    return events_emit(user_id=user_id, events=[(event, data)])


def memory_as_event(item) -> dict:
    """A memory item as the memory.* events carry it."""
    return {
        "id": item.id,
        "source": item.source,
        "content": item.content,
        "app_id": item.app_id,
        "project_id": item.project_id,
        "session_id": str(item.chat_session_id) if item.chat_session_id else None,
        "topics": list(item.topics or []),
        "occurred_at": item.occurred_at,
        "created_at": item.created_at,
    }
