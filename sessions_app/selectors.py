"""Reads of sessions_app tables: sessions and messages (always scoped to the caller), and usage.

Usage reads group usage logs by day and model (and user, for the admin report); the rows are
written by `sessions_app.services.usage.usage_record`, with cost priced from MNEMO_PRICE_TABLE at
the time of the call.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from decimal import Decimal

from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from memory_site.errors import InvalidInput, NotFound
from sessions_app.models import ChatSession, Message, UsageLog

# The roles a message may have, as (value, label) pairs, for other apps' input validation.
MESSAGE_ROLE_CHOICES = Message.Role.choices


def message_with_session(message_id: int) -> Message | None:
    """The message with its session and user loaded (for a task), or None once deleted."""
    return Message.objects.filter(id=message_id).select_related("session__user").first()


def session_is_open(session: ChatSession) -> bool:
    return session.status == ChatSession.Status.OPEN


def session_get(session_id) -> ChatSession | None:
    """Any user's session by id (staff pages that name one), or None."""
    return ChatSession.objects.filter(id=session_id).first()


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


def session_open_locked(*, user, session_id: uuid.UUID | str) -> ChatSession | None:
    """The caller's session if it is still open, locked for the current transaction; else None.

    SELECT ... FOR UPDATE re-reads the status after waiting for a concurrent close, so a session
    returned here stays open until the caller commits. The user is set on the instance (no
    second read of it).
    """
    session = (
        ChatSession.objects.select_for_update()
        .filter(id=session_id, user=user, status=ChatSession.Status.OPEN)
        .first()
    )
    if session is not None:
        session.user = user
    return session


def sessions_ended_among(*, user_id: int, session_ids: set[str]) -> set[str]:
    """Of these session ids (strings), the user's sessions that are no longer open (closing or
    closed): the chats whose end the next chat's first pack must see in full."""
    if not session_ids:
        return set()
    ended = (
        ChatSession.objects.filter(user_id=user_id, id__in=sorted(session_ids))
        .exclude(status=ChatSession.Status.OPEN)
        .values_list("id", flat=True)
    )
    return {str(session_id) for session_id in ended}


# A chat app's side tasks (titles, tags) go through a bookkeeping session that is no chat.
APP_TASKS_SESSION = {"app_tasks": True}


def chat_sessions(*, user) -> QuerySet[ChatSession]:
    """The user's chats: every session but the chat apps' side-task bookkeeping."""
    return ChatSession.objects.filter(user=user).exclude(metadata__contains=APP_TASKS_SESSION)


def sessions_for_user(*, user, app_id: str | None = None) -> QuerySet[ChatSession]:
    queryset = chat_sessions(user=user).order_by("-opened_at")
    if app_id:
        queryset = queryset.filter(app_id=app_id)
    return queryset


def session_messages(*, session: ChatSession, after_id: int = 0) -> QuerySet[Message]:
    return Message.objects.filter(session=session, id__gt=after_id).order_by("id")


def session_user_turn_count(*, session: ChatSession) -> int:
    return Message.objects.filter(session=session, role=Message.Role.USER).count()


# --- Usage and cost ----------------------------------------------------------------------------

DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
SUMS = {
    "calls": Count("id"),
    "tokens_in": Sum("tokens_in"),
    "tokens_out": Sum("tokens_out"),
    "cost_usd": Sum("cost_usd"),
}


def usage_parse_bound(raw: str | None, *, field: str, end: bool = False) -> dt.datetime | None:
    """An ISO 8601 date or datetime from a query string; None when absent.

    A bare date means the start of that day (UTC) for `since` and the end of it for `until`
    (`end=True`), so `since=2025-01-01&until=2025-01-31` covers all of January. A datetime
    without an offset is taken as UTC. Raises InvalidInput naming the field.
    """
    if raw is None or raw.strip() == "":
        return None
    raw = raw.strip()
    moment = day = None
    try:
        # fromisoformat (behind parse_datetime) reads a bare date as midnight: test dates first.
        if DATE_ONLY.fullmatch(raw):
            day = parse_date(raw)
        else:
            moment = parse_datetime(raw)
    except ValueError:
        moment = day = None
    if moment is None and day is None:
        raise InvalidInput(
            f"{field}: expected an ISO 8601 date (2025-01-31) or datetime, got {raw!r}.",
            code="invalid_date",
            field=field,
        )
    if moment is None:
        moment = dt.datetime.combine(day, dt.time.min)
        if end:
            moment += dt.timedelta(days=1)
        return moment.replace(tzinfo=dt.UTC)
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=dt.UTC)
    return moment


def usage_logs(
    *, user=None, since: dt.datetime | None = None, until: dt.datetime | None = None
) -> QuerySet[UsageLog]:
    """Usage rows in [since, until) for one user (or everyone when `user` is None)."""
    rows = UsageLog.objects.all()
    if user is not None:
        rows = rows.filter(user=user)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if until is not None:
        rows = rows.filter(created_at__lt=until)
    return rows


def _figures(values: dict) -> dict:
    return {
        "calls": values["calls"] or 0,
        "tokens_in": values["tokens_in"] or 0,
        "tokens_out": values["tokens_out"] or 0,
        "cost_usd": float(values["cost_usd"] or Decimal(0)),
    }


def usage_report(
    *,
    user=None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    by_user: bool = False,
) -> dict:
    """Totals, per-model totals and rows per (day, model[, user]) with tokens and cost (USD)."""
    rows = usage_logs(user=user, since=since, until=until)
    keys = ["day", "model"] + (["user_id", "user__username"] if by_user else [])
    grouped = (
        rows.annotate(day=TruncDate("created_at", tzinfo=dt.UTC))
        .values(*keys)
        .annotate(**SUMS)
        .order_by(*keys)
    )
    per_model = rows.values("model").annotate(**SUMS).order_by("model")
    report_rows = []
    for values in grouped:
        row = {"day": values["day"].isoformat(), "model": values["model"]}
        if by_user:
            row.update(user_id=values["user_id"], username=values["user__username"])
        report_rows.append(row | _figures(values))
    return {
        "since": since.isoformat() if since else None,
        "until": until.isoformat() if until else None,
        "totals": _figures(rows.aggregate(**SUMS)),
        "by_model": [{"model": v["model"]} | _figures(v) for v in per_model],
        "rows": report_rows,
    }
