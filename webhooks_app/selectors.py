"""Reads of webhook endpoints and their deliveries, always in the caller's scope."""

from __future__ import annotations

from django.db.models import QuerySet

from memory_site.errors import NotFound
from webhooks_app.models import WebhookDelivery, WebhookEndpoint

DELIVERIES_SHOWN = 100


def endpoints_for_user(*, user) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(user=user).order_by("created_at")


def endpoint_get_for_user(*, user, endpoint_id) -> WebhookEndpoint:
    """The user's own endpoint; another user's or a missing one is a 404."""
    endpoint = WebhookEndpoint.objects.filter(id=endpoint_id, user=user).first()
    if endpoint is None:
        raise NotFound(
            f"No webhook endpoint {endpoint_id}.", code="webhook_not_found", field="endpoint_id"
        )
    return endpoint


def deliveries_of(*, endpoint: WebhookEndpoint) -> list[WebhookDelivery]:
    """The endpoint's latest deliveries, newest first, each with its attempts."""
    return list(
        WebhookDelivery.objects.filter(endpoint=endpoint)
        .prefetch_related("attempt_log")
        .order_by("-created_at")[:DELIVERIES_SHOWN]
    )
