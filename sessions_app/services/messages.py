"""Storing chat messages: redacted copy, encrypted original, exact token count."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from memory_site.tokens import count_tokens
from mnemo_text.redaction import redact
from sessions_app.models import ChatSession, Message
from sessions_app.selectors import session_get_for_user
from sessions_app.services.sessions import session_require_open

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 200_000


def message_append(
    *,
    user,
    session_id: uuid.UUID,
    role: str,
    content: str,
    model: str = "",
    incomplete: bool = False,
    metadata: dict | None = None,
    created_at=None,
    run_hooks: bool = True,
) -> Message:
    """Store one message in an open session of the caller's and run the after-message hooks.

    The sanitized copy is made here, on the write path, so nothing downstream ever sees raw
    PII. Raises NotFound (not the caller's session) and Conflict (session not open). The
    session row is locked while the message is written so concurrent writers keep id order.
    """
    with transaction.atomic():
        session = session_get_for_user(user=user, session_id=session_id, lock=True)
        session_require_open(session)
        message = message_create(
            session=session,
            role=role,
            content=content,
            model=model,
            incomplete=incomplete,
            metadata=metadata,
            created_at=created_at,
        )
    if run_hooks:
        message_run_hooks(message=message)
    return message


def message_create(
    *,
    session: ChatSession,
    role: str,
    content: str,
    model: str = "",
    incomplete: bool = False,
    metadata: dict | None = None,
    created_at=None,
) -> Message:
    """Insert a message row (no checks, no hooks): for callers that already hold the session."""
    now = timezone.now()
    message = _message_row(
        session=session,
        role=role,
        content=content,
        model=model,
        incomplete=incomplete,
        metadata=metadata,
        created_at=created_at or now,
    )
    message.save(force_insert=True)
    ChatSession.objects.filter(id=session.id).update(last_activity_at=now)
    return message


def _message_row(
    *,
    session: ChatSession,
    role: str,
    content: str,
    metadata: dict | None,
    created_at,
    model: str = "",
    incomplete: bool = False,
) -> Message:
    """An unsaved message as every writer stores it: the redacted copy and its token count."""
    sanitized = redact(content)
    return Message(
        session=session,
        user_id=session.user_id,
        role=role,
        content=content,
        content_sanitized=sanitized,
        token_count=count_tokens(sanitized),
        model=model,
        incomplete=incomplete,
        metadata=dict(metadata or {}),
        created_at=created_at,
    )


def messages_create(
    *,
    session: ChatSession,
    messages: Sequence[tuple[str, str]],
    metadata: dict | None = None,
) -> list[Message]:
    """Insert (role, content) messages in one statement, each row as `message_create` writes
    it (redacted copy, token count, its own created_at). For callers that hold the session's
    lock and move its last_activity_at themselves (the gateway, in the statement that saves
    its conversation); no checks, no hooks."""
    rows = []
    for role, content in messages:
        rows.append(
            _message_row(
                session=session,
                role=role,
                content=content,
                metadata=metadata,
                created_at=timezone.now(),
            )
        )
    if not rows:
        return []
    created = Message.objects.bulk_create(rows)
    return created


def message_run_hooks(*, message: Message) -> None:
    """Run MNEMO_AFTER_MESSAGE_HOOKS; a failing hook is logged, never loses the stored message."""
    for path in settings.MNEMO_AFTER_MESSAGE_HOOKS:
        try:
            hook = import_string(path)
        except ImportError:
            logger.warning("after-message hook %s is not importable", path)
            continue
        try:
            hook(message=message)
        except Exception:
            logger.exception("after-message hook %s failed for message %s", path, message.id)
