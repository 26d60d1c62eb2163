"""When a turn gets a pack: the opt-out policy, the turn's state in one round trip and the
refresh decision (rebuild now, or reuse the last pack).
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import connection
from django.utils.dateparse import parse_datetime

from context_app.models import ContextSettings, OptOut, TopicOverride
from context_app.services.topics import (
    TopicChoice,
)
from sessions_app.models import ChatSession, Message


def opted_out_by_environment(user) -> bool:
    names = {name.strip().lower() for name in settings.MNEMO_OPT_OUT_USERNAMES if name.strip()}
    return user.get_username().lower() in names


def context_opted_out(*, user) -> bool:
    """True when the user is on the opt-out list (admin rows or MNEMO_OPT_OUT_USERNAMES)."""
    return opted_out_by_environment(user) or OptOut.objects.filter(user=user).exists()


def turn_state(session: ChatSession) -> tuple[int, bool, TopicChoice | None]:
    """(user turns so far, opted out in admin, topic override) in one round trip.

    The override is the session's own, else the user's (session_id NULL); see TopicOverride.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT
                  (SELECT count(*) FROM {Message._meta.db_table}
                    WHERE session_id = %s AND role = %s),
                  EXISTS (SELECT 1 FROM {OptOut._meta.db_table} WHERE user_id = %s),
                  override.key, override.title, override.session_id IS NOT NULL
                FROM (SELECT 1) AS one
                LEFT JOIN LATERAL (
                  SELECT key, title, session_id FROM {TopicOverride._meta.db_table}
                  WHERE session_id = %s OR (user_id = %s AND session_id IS NULL)
                  ORDER BY session_id NULLS LAST LIMIT 1
                ) AS override ON true""",
            [session.id, Message.Role.USER, session.user_id, session.id, session.user_id],
        )
        turns, opted_out, key, title, per_session = cursor.fetchone()
    override = None
    if key:
        source = "session_override" if per_session else "user_override"
        override = TopicChoice(key=key, title=title, score=1.0, source=source)
    return turns, opted_out, override


def refresh_decision(
    *, state: dict, turn: int, override: str, context_settings: ContextSettings, now: datetime
) -> str | None:
    """Why the pack must be rebuilt now, or None to reuse the last one."""
    if not state.get("log_id"):
        return "first_build"
    if state.get("override", "") != override:
        return "override_changed"
    built_at = parse_datetime(state.get("built_at") or "")
    if built_at is None:
        return "first_build"
    age = (now - built_at).total_seconds()
    if age < context_settings.refresh_cooldown_seconds:
        return None
    if turn - int(state.get("built_turn") or 0) >= context_settings.refresh_every_turns:
        return "every_k_turns"
    if age >= context_settings.refresh_every_minutes * 60:
        return "every_t_minutes"
    return None
