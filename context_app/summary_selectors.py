"""Reads of what the close pipeline and consolidation wrote, always scoped to the caller."""

from __future__ import annotations

from django.db.models import QuerySet

from context_app.models import SessionConsolidation, UserChatSummary
from context_app.services.consolidation import CONSOLIDATION_KIND
from ingestion_app.models import MemoryItem
from sessions_app.models import ChatSession, Message


def user_rollups(*, user, app_id: str = "default") -> dict[str, UserChatSummary]:
    """The user's rollups for one app keyed by kind ("recent", "history"); absent kinds omitted.

    Plain SQL: every context pack reads them (see memory_site.raw_reads)."""
    return {
        rollup.kind: rollup
        for rollup in UserChatSummary.objects.raw(
            f"SELECT * FROM {UserChatSummary._meta.db_table} WHERE user_id = %s AND app_id = %s",
            [user.pk, app_id],
        )
    }


def session_high_water_mark(*, session: ChatSession) -> int:
    """Id of the last message already folded into long-term memory (0 when none)."""
    return (
        SessionConsolidation.objects.filter(session=session)
        .values_list("high_water_message_id", flat=True)
        .first()
        or 0
    )


def session_consolidation_summaries(*, session: ChatSession) -> QuerySet[MemoryItem]:
    """The session's consolidation summaries, oldest range first."""
    return MemoryItem.objects.filter(
        user_id=session.user_id,
        chat_session=session,
        source=MemoryItem.Source.SUMMARY,
        metadata__kind=CONSOLIDATION_KIND,
    ).order_by("occurred_at", "id")


def session_live_messages(*, session: ChatSession) -> QuerySet[Message]:
    """Messages after the high-water mark: what a prompt still needs verbatim."""
    return Message.objects.filter(
        session=session, id__gt=session_high_water_mark(session=session)
    ).order_by("id")
