"""Registering, changing and removing webhook endpoints; the secret is shown once."""

from __future__ import annotations

import base64
import ipaddress
import secrets
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from memory_site.errors import InvalidInput
from webhooks_app.models import WebhookEndpoint
from webhooks_app.selectors import endpoint_get_for_user
from webhooks_app.services.events import EVENT_TYPES

SECRET_BYTES = 24
MAX_ENDPOINTS_PER_USER = 20


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _private(host: str) -> bool:
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False  # unresolvable now: the attempts will say so
    return any(not ipaddress.ip_address(address.split("%")[0]).is_global for address in addresses)


def _checked_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("url: must be an http:// or https:// address with a host.", field="url")
    if parts.username or parts.password:
        raise InvalidInput("url: must not carry a user name or password.", field="url")
    if not settings.MNEMO_WEBHOOK_ALLOW_PRIVATE and _private(parts.hostname):
        raise InvalidInput(
            "url: points at a private or loopback address, which this server refuses "
            "(MNEMO_WEBHOOK_ALLOW_PRIVATE).",
            field="url",
        )
    return url


def _checked_events(events: list[str]) -> list[str]:
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown:
        raise InvalidInput(
            f"events: unknown event {unknown[0]!r}; the events are {', '.join(EVENT_TYPES)}.",
            field="events",
        )
    return sorted(set(events))


def endpoint_create(
    *, user, url: str, events: list[str] | None = None, description: str = ""
) -> WebhookEndpoint:
    """A new enabled endpoint with a fresh secret (read it from the returned object once)."""
    url, events = _checked_url(url), _checked_events(events or [])
    with transaction.atomic():
        if WebhookEndpoint.objects.filter(user=user).count() >= MAX_ENDPOINTS_PER_USER:
            raise InvalidInput(
                f"url: at most {MAX_ENDPOINTS_PER_USER} webhook endpoints per user.", field="url"
            )
        return WebhookEndpoint.objects.create(
            user=user, url=url, events=events, description=description, secret=new_secret()
        )


def endpoint_update(*, user, endpoint_id, **changes) -> WebhookEndpoint:
    """Change url, events, description or enabled; enabling clears the disabled reason."""
    endpoint = endpoint_get_for_user(user=user, endpoint_id=endpoint_id)
    if "url" in changes:
        endpoint.url = _checked_url(changes["url"])
    if "events" in changes:
        endpoint.events = _checked_events(changes["events"])
    if "description" in changes:
        endpoint.description = changes["description"]
    if "enabled" in changes:
        endpoint.enabled = changes["enabled"]
        if endpoint.enabled:
            endpoint.disabled_reason, endpoint.disabled_at = "", None
    endpoint.save()
    return endpoint


def endpoint_secret_rotate(*, user, endpoint_id) -> WebhookEndpoint:
    endpoint = endpoint_get_for_user(user=user, endpoint_id=endpoint_id)
    endpoint.secret = new_secret()
    endpoint.save(update_fields=["secret", "updated_at"])
    return endpoint


def endpoint_delete(*, user, endpoint_id) -> None:
    endpoint_get_for_user(user=user, endpoint_id=endpoint_id).delete()
