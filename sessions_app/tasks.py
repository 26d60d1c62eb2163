"""Thin django-q2 task entry points for sessions_app (load by id, call a service)."""

from __future__ import annotations

from sessions_app.services.retention import retention_purge
from sessions_app.services.sessions import sessions_close_stale


def close_stale_sessions_task() -> int:
    return sessions_close_stale()


def retention_task() -> dict:
    """Daily schedule `mnemo-retention`: purge messages of long-inactive sessions."""
    return retention_purge().as_dict()
