"""The user's rollups: the "recent" and "history" digests folded from their session summaries
after each close (`user_rollups_rebuild`), which every context pack shows."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.db.models.functions import Coalesce

from context_app.models import SessionSummary, UserChatSummary
from memory_site.db_locks import advisory_transaction_lock
from mnemo_text.summaries import fold_summaries
from sessions_app.models import ChatSession

# Older sessions folded into "history": beyond this many, the cap has long been filled.
HISTORY_MAX_SESSIONS = 100


def user_rollups_rebuild(*, user_id: int, app_id: str) -> dict[str, UserChatSummary]:
    """Recompute the user's "recent" and "history" digests for one app from session summaries.

    Sessions are dated by their last message (so imported or back-dated sessions fall where
    they happened). "recent" holds the closed sessions within MNEMO_RECENT_WINDOW_DAYS of the
    user's newest closed session, "history" folds every older one (newest HISTORY_MAX_SESSIONS),
    each within its character cap. Idempotent; serialized per user and app by a transaction
    advisory lock, so concurrent closes of the same user's sessions never lose one another.
    """
    with transaction.atomic():
        advisory_transaction_lock(f"rollups:{user_id}:{app_id}")
        rows = list(
            SessionSummary.objects.filter(
                user_id=user_id,
                session__app_id=app_id,
                session__status=ChatSession.Status.CLOSED,
            )
            .exclude(summary="")
            .annotate(
                session_date=Coalesce(
                    Max("session__messages__created_at"), F("session__last_activity_at")
                )
            )
            .values_list("summary", "session_date", "session_id")
        )
        rows.sort(key=lambda row: (row[1], str(row[2])), reverse=True)
        recent: list[tuple[str, datetime]] = []
        history: list[tuple[str, datetime]] = []
        if rows:
            cutoff = rows[0][1] - timedelta(days=settings.MNEMO_RECENT_WINDOW_DAYS)
            for summary, date, _session_id in rows:
                (recent if date >= cutoff else history).append((summary, date))
        buckets = {
            UserChatSummary.Kind.RECENT: (recent, settings.MNEMO_ROLLUP_RECENT_MAX_CHARS),
            UserChatSummary.Kind.HISTORY: (history, settings.MNEMO_ROLLUP_HISTORY_MAX_CHARS),
        }
        rollups: dict[str, UserChatSummary] = {}
        for kind, (entries, max_chars) in buckets.items():
            folded = entries[:HISTORY_MAX_SESSIONS]
            # The history leaves out what the recent sessions have since changed.
            newer = (
                [summary for summary, _ in recent[:HISTORY_MAX_SESSIONS]]
                if kind == UserChatSummary.Kind.HISTORY
                else []
            )
            rollup, _ = UserChatSummary.objects.update_or_create(
                user_id=user_id,
                app_id=app_id,
                kind=kind,
                defaults={
                    "summary": fold_summaries(
                        [summary for summary, _ in folded], max_chars=max_chars, newer=newer
                    ),
                    "session_count": len(entries),
                    "period_start": entries[-1][1] if entries else None,
                    "period_end": entries[0][1] if entries else None,
                },
            )
            rollups[str(kind)] = rollup
    return rollups
