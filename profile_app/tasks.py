"""Thin django-q2 task entry points for profile_app (load by id, call a service)."""

from __future__ import annotations

from profile_app.services.profile import (
    profile_import_read,
    profile_memories_read,
    profile_message_read,
)
from sessions_app.selectors import message_with_session


def profile_message_read_task(message_id: int) -> int:
    """The model's reading of one user message; a message deleted since reads nothing."""
    message = message_with_session(message_id)
    return len(profile_message_read(message=message)) if message is not None else 0


def profile_import_read_task(import_file_id: int) -> int:
    return profile_import_read(import_file_id=import_file_id)


def profile_memories_read_task(memory_ids: list[int], origin: str) -> int:
    return profile_memories_read(memory_ids=memory_ids, origin=origin)
