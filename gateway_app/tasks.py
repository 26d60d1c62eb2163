"""Thin django-q2 task entry points for gateway_app (load by id, call a service)."""

from __future__ import annotations

from gateway_app.services.turns import messages_hooks_run


def messages_hooks_task(message_ids: list[int]) -> int:
    return messages_hooks_run(message_ids=message_ids)
