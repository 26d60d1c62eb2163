"""Plain factory functions for test data (no factory library needed)."""

from __future__ import annotations

from django.contrib.auth import get_user_model


def make_user(username: str, *, staff: bool = False, password: str = "pass-word-123"):
    user_model = get_user_model()
    user = user_model.objects.create_user(username=username, password=password, is_staff=staff)
    return user


def open_session(user, **fields):
    from sessions_app.services.sessions import session_open

    return session_open(user=user, **fields)


def add_message(session, role: str, content: str, **fields):
    from sessions_app.services.messages import message_append

    return message_append(
        user=session.user, session_id=session.id, role=role, content=content, **fields
    )
