"""Thin django-q2 task entry points for context_app: load by id, call a service.

Tasks log failures and return an outcome instead of raising: with synchronous tasks
(MNEMO_TASKS_SYNC, the test suite) an exception would surface in the request that queued them.
Failures stay visible where a user looks: the session's `close_error`, the consolidation row.
"""

from __future__ import annotations

import logging

from context_app.services.consolidation import session_consolidate
from context_app.services.rollups import user_rollups_rebuild
from context_app.services.summaries import session_close_run, session_resummarize

logger = logging.getLogger(__name__)


def session_close_task(session_id: str) -> str:
    """Summarize and close one `closing` session (queued by sessions_app on close)."""
    return session_close_run(session_id=session_id)


def session_resummarize_task(session_id: str) -> str:
    """Rebuild a closed session's summary, tags and the user's rollups (admin action)."""
    return session_resummarize(session_id=session_id)


def consolidation_task(session_id: str) -> str:
    """Fold the oldest half of a long session into long-term memory."""
    try:
        created = session_consolidate(session_id=session_id)
    except Exception:
        logger.exception("consolidating session %s failed", session_id)
        return "failed"
    return f"consolidated {len(created)}"


def user_rollups_rebuild_task(user_id: int, app_id: str) -> str:
    """Recompute one user's recent/history rollups for one app (admin action)."""
    rollups = user_rollups_rebuild(user_id=user_id, app_id=app_id)
    return ", ".join(f"{kind}: {rollup.session_count} sessions" for kind, rollup in rollups.items())
