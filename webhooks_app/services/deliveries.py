"""Sending deliveries: signed, timed, logged per attempt, retried with backoff for a day.

An attempt is a POST of the delivery's body with the Standard Webhooks headers. A 2xx answer
delivers it. Anything else (another status, a timeout, a refused connection) is logged and
retried after the next wait of MNEMO_WEBHOOK_RETRY_SECONDS (about a day in all); when the last
retry fails the delivery is marked failed and its endpoint disabled, with the reason. The
one-minute sweep (`deliveries_due_send`) sends every delivery whose time has come; a delivery
is claimed with a lease first, so a sweep and a queued task never send it twice at once.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from memory_site import metrics
from webhooks_app.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)

SNIPPET_CHARS = 500
# A delivery is held this much longer than the request may take.
LEASE_MARGIN_SECONDS = 30
# Deliveries one sweep sends at most (the next sweep takes the rest).
SWEEP_BATCH = 200


def signed_headers(*, secret: str, message_id: str, moment: datetime, body: str) -> dict:
    """The Standard Webhooks headers of one attempt."""
    signature = Webhook(secret).sign(msg_id=message_id, timestamp=moment, data=body)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": "Mnemo-Webhooks/1",
    }


def _claim(delivery_id) -> WebhookDelivery | None:
    now = timezone.now()
    lease = now + timedelta(seconds=settings.MNEMO_WEBHOOK_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS)
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .select_related("endpoint")
            .filter(id=delivery_id, status=WebhookDelivery.Status.PENDING)
            .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
            .first()
        )
        if delivery is None or not delivery.endpoint.enabled:
            return None
        if delivery.next_attempt_at and delivery.next_attempt_at > now:
            return None
        delivery.locked_until = lease
        delivery.save(update_fields=["locked_until"])
    return delivery


def _post(delivery: WebhookDelivery) -> WebhookAttempt:
    moment = datetime.now(UTC)
    headers = signed_headers(
        secret=delivery.endpoint.secret,
        message_id=delivery.message_id,
        moment=moment,
        body=delivery.body,
    )
    attempt = WebhookAttempt(delivery=delivery, attempted_at=timezone.now())
    started = time.perf_counter()
    try:
        response = httpx.post(
            delivery.endpoint.url,
            content=delivery.body.encode(),
            headers=headers,
            timeout=settings.MNEMO_WEBHOOK_TIMEOUT_SECONDS,
            follow_redirects=False,
        )
        attempt.status_code = response.status_code
        attempt.response_snippet = response.text[:SNIPPET_CHARS]
    except httpx.HTTPError as exc:
        attempt.error = f"{type(exc).__name__}: {exc}"[:SNIPPET_CHARS]
    attempt.latency_ms = round((time.perf_counter() - started) * 1000, 1)
    return attempt


def delivery_attempt(*, delivery_id) -> str:
    """One attempt of a due delivery; returns "delivered", "retry", "failed" or "skipped"."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return "skipped"
    attempt = _post(delivery)
    ok = attempt.status_code is not None and 200 <= attempt.status_code < 300
    waits = settings.MNEMO_WEBHOOK_RETRY_SECONDS
    with transaction.atomic():
        attempt.save()
        delivery.attempts += 1
        delivery.last_status_code = attempt.status_code
        delivery.locked_until = None
        if ok:
            delivery.status = WebhookDelivery.Status.DELIVERED
            delivery.delivered_at = timezone.now()
            delivery.next_attempt_at = None
            outcome = "delivered"
        elif delivery.attempts <= len(waits):
            delivery.next_attempt_at = timezone.now() + timedelta(
                seconds=waits[delivery.attempts - 1]
            )
            outcome = "retry"
        else:
            delivery.status = WebhookDelivery.Status.FAILED
            delivery.next_attempt_at = None
            outcome = "failed"
        delivery.save()
        if outcome == "failed":
            reason = attempt.error or f"HTTP {attempt.status_code}"
            WebhookEndpoint.objects.filter(id=delivery.endpoint_id, enabled=True).update(
                enabled=False,
                disabled_at=timezone.now(),
                disabled_reason=(
                    f"Disabled after {delivery.attempts} failed attempts over "
                    f"{_span(waits)} to deliver {delivery.event} {delivery.message_id}; "
                    f"last answer: {reason}"
                )[:1000],
            )
    metrics.WEBHOOK_ATTEMPTS.labels(delivery.event, outcome).inc()
    metrics.WEBHOOK_SECONDS.observe(attempt.latency_ms / 1000)
    if not ok:
        logger.info(
            "webhook %s to %s: attempt %d %s (%s)",
            delivery.message_id,
            delivery.endpoint.url,
            delivery.attempts,
            outcome,
            attempt.error or attempt.status_code,
        )
    return outcome


def _span(waits: list[int]) -> str:
    hours = sum(waits) / 3600
    return f"{hours:.0f} hours" if hours >= 1 else f"{sum(waits)} seconds"


def deliveries_due_send(*, limit: int = SWEEP_BATCH) -> int:
    """Attempt every pending delivery whose time has come (oldest first); returns how many."""
    now = timezone.now()
    due = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING,
            next_attempt_at__lte=now,
            endpoint__enabled=True,
        )
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .order_by("next_attempt_at")
        .values_list("id", flat=True)[:limit]
    )
    for delivery_id in due:
        delivery_attempt(delivery_id=delivery_id)
    return len(due)
