"""Thin django-q2 task entry points for webhooks_app."""

from __future__ import annotations

from webhooks_app.services.deliveries import deliveries_due_send, delivery_attempt


def webhook_deliver_task(delivery_id: str) -> str:
    return delivery_attempt(delivery_id=delivery_id)


def webhooks_deliver_due_task() -> int:
    """Every minute: the retries whose time has come, and anything a lost task left."""
    return deliveries_due_send()
