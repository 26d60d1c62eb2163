"""Session lifecycle: open, heartbeat, visibility, close."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from memory_site.db_locks import advisory_try_lock
from memory_site.errors import Conflict
from memory_site.task_paths import SESSION_CLOSE_TASK
from mnemo_text.redaction import redact
from sessions_app.models import ChatSession
from sessions_app.selectors import session_get_for_user

logger = logging.getLogger(__name__)


def session_open(
    *,
    user,
    app_id: str = "default",
    title: str = "",
    agent_id: str = "",
    project_id: str = "",
    metadata: dict | None = None,
    close_session_id: uuid.UUID | None = None,
) -> ChatSession:
    """Create an open session; if close_session_id is given, close that (caller's) session too.

    Raises NotFound when close_session_id is not the caller's. One transaction.
    """
    with transaction.atomic():
        if close_session_id:
            session_close(user=user, session_id=close_session_id)
        now = timezone.now()
        return ChatSession.objects.create(
            user=user,
            app_id=app_id or settings.MNEMO_DEFAULT_APP_ID,
            # Titles are shown in lists and sent to models as context: store the redacted form.
            title=redact(title),
            agent_id=agent_id,
            project_id=project_id,
            metadata=metadata or {},
            opened_at=now,
            last_heartbeat_at=now,
            last_activity_at=now,
        )


def session_require_open(session: ChatSession) -> None:
    if session.status != ChatSession.Status.OPEN:
        raise Conflict(f"Session {session.id} is {session.status}.", code="session_not_open")


def session_heartbeat(*, user, session_id: uuid.UUID) -> ChatSession:
    """Record activity; a closed session cannot be revived (409)."""
    session = session_get_for_user(user=user, session_id=session_id)
    session_require_open(session)
    now = timezone.now()
    ChatSession.objects.filter(id=session.id).update(last_heartbeat_at=now, last_activity_at=now)
    session.last_heartbeat_at = session.last_activity_at = now
    return session


def session_set_visibility(*, user, session_id: uuid.UUID, visible: bool) -> ChatSession:
    session = session_get_for_user(user=user, session_id=session_id)
    session_require_open(session)
    now = timezone.now()
    ChatSession.objects.filter(id=session.id).update(visible=visible, last_activity_at=now)
    session.visible = visible
    return session


def session_close(*, user, session_id: uuid.UUID) -> ChatSession:
    """Move an open session to `closing` and queue its summarization after commit.

    Idempotent: the open -> closing transition is a conditional UPDATE, so only the first of any
    number of concurrent calls queues the task; later calls return the session as it stands.
    """
    session = session_get_for_user(user=user, session_id=session_id)
    if _claim_for_closing(session.id):
        session.refresh_from_db()
    return session


def _claim_for_closing(session_id) -> bool:
    """Atomically flip one session open -> closing and queue the close task; False if not open."""
    claimed = ChatSession.objects.filter(id=session_id, status=ChatSession.Status.OPEN).update(
        status=ChatSession.Status.CLOSING, close_error=""
    )
    if claimed:
        transaction.on_commit(lambda: session_close_enqueue(session_id=session_id))
    return bool(claimed)


def session_close_enqueue(*, session_id) -> None:
    """Queue the close task (a higher layer's, named by dotted path in memory_site.task_paths)."""
    async_task(SESSION_CLOSE_TASK, str(session_id), task_name=f"close-{session_id}")


def sessions_close_stale(*, now=None) -> int:
    """Close every open session whose last activity is older than MNEMO_STALE_SESSION_MINUTES.

    Run by a django-q2 schedule; safe to run concurrently (each close is a conditional update).
    """
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=settings.MNEMO_STALE_SESSION_MINUTES)
    stale_ids = list(
        ChatSession.objects.filter(
            status=ChatSession.Status.OPEN, last_activity_at__lt=cutoff
        ).values_list("id", flat=True)
    )
    closed = 0
    for session_id in stale_ids:
        with transaction.atomic():
            closed += _claim_for_closing(session_id)
    if closed:
        logger.info("Closed %d stale sessions", closed)
    return closed


def sessions_close_resume_abandoned() -> int:
    """Queue the close task again for `closing` sessions no worker is closing; returns how many.

    The close task holds the connection-level lock ``session-close:<id>`` while it works, so a
    worker killed mid-close loses it with its connection and leaves the session `closing`
    with nothing written (the summary is stored in one transaction). A session whose lock is
    free and that has no recorded failure (those have their own retry) is queued again; an
    extra delivery is harmless: the task takes the lock or finds the session closed.
    """
    closing = list(
        ChatSession.objects.filter(status=ChatSession.Status.CLOSING, close_error="").values_list(
            "id", flat=True
        )[:500]
    )
    queued = 0
    for session_id in closing:
        with advisory_try_lock(f"session-close:{session_id}") as free:
            if not free:
                continue
        session_close_enqueue(session_id=session_id)
        queued += 1
    if queued:
        logger.info("queued the close of %d session(s) again", queued)
    return queued
