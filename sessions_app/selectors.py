"""Reads of sessions and messages, always scoped to the caller."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from memory_site.errors import NotFound
from sessions_app.models import ChatSession, Message


def session_get_for_user(
    *, user, session_id: uuid.UUID | str, lock: bool = False, field: str = "session_id"
) -> ChatSession:
    """The caller's session, or NotFound: another user's session is indistinguishable from none.

    With lock=True the row is locked (SELECT ... FOR UPDATE) for the current transaction.
    `field` names the request field in the error.
    """
    queryset = ChatSession.objects.filter(user=user)
    if lock:
        queryset = queryset.select_for_update()
    try:
        return queryset.get(id=session_id)
    except (ChatSession.DoesNotExist, ValueError) as exc:
        raise NotFound(
            f"Session {session_id} not found.", code="session_not_found", field=field
        ) from exc


def sessions_for_user(*, user, app_id: str | None = None) -> QuerySet[ChatSession]:
    queryset = ChatSession.objects.filter(user=user).order_by("-opened_at")
    if app_id:
        queryset = queryset.filter(app_id=app_id)
    return queryset


def session_messages(*, session: ChatSession, after_id: int = 0) -> QuerySet[Message]:
    return Message.objects.filter(session=session, id__gt=after_id).order_by("id")


def session_user_turn_count(*, session: ChatSession) -> int:
    return Message.objects.filter(session=session, role=Message.Role.USER).count()
