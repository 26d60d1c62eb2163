"""Reads of recorded context packs for the API and the staff pages."""

from __future__ import annotations

from django.utils import timezone

from context_app.models import InjectionLog, TopicSummary
from context_app.services.context_pack.refresh import context_opted_out
from context_app.summary_selectors import user_rollups
from sessions_app.models import ChatSession


def session_context_last(*, session: ChatSession) -> dict:
    """The last pack that went into a reply of `session` and why, plus the last failure if a
    later turn went out unaugmented. `pack` is None when no pack was ever prepared."""
    logs = InjectionLog.objects.filter(session=session)
    last = logs.exclude(status=InjectionLog.Status.FAILED).order_by("-id").first()
    failure = logs.filter(status=InjectionLog.Status.FAILED).order_by("-id").first()
    body: dict = {"session_id": str(session.id), "pack": None, "last_failure": None}
    if failure is not None and (last is None or failure.id > last.id):
        body["last_failure"] = {
            "reason": failure.reason,
            "error": failure.error,
            "turn": failure.turn_number,
            "at": failure.created_at,
        }
    if last is None:
        return body
    built = last
    if last.status == InjectionLog.Status.REUSED:
        built = (
            logs.filter(status=InjectionLog.Status.BUILT, pack_hash=last.pack_hash, id__lte=last.id)
            .order_by("-id")
            .first()
            or last
        )
    topic = None
    if last.topic_key:
        topic = {
            "key": last.topic_key,
            "title": last.topic_title,
            "score": last.topic_score,
            "source": last.topic_source,
        }
    body.update(
        {
            "pack": last.pack_text,
            "hash": last.pack_hash,
            "chars": last.pack_chars,
            "tokens": last.pack_tokens,
            "segments": last.segments,
            "memories": last.memories,
            "topic": topic,
            "status": last.status,
            "reason": last.reason,
            "reused": last.status == InjectionLog.Status.REUSED,
            "turn": last.turn_number,
            "prepared_at": last.created_at,
            "built_at": built.created_at,
            "built_reason": built.reason,
            "elapsed_ms": last.elapsed_ms,
            "skipped": last.skipped,
            "user_message_id": last.user_message_id,
            "assistant_message_id": last.assistant_message_id,
            "injection_log_id": last.id,
        }
    )
    return body


def user_context_snapshot(*, user, app_id: str) -> dict:
    """What Mnemo would draw on for this user: the recent and history rollups and the topic
    summaries (newest first, expired ones flagged)."""
    rollups = user_rollups(user=user, app_id=app_id)
    recent = rollups.get("recent")
    history = rollups.get("history")
    topics = TopicSummary.objects.filter(user=user, app_id=app_id).order_by("-built_at")[:50]
    now = timezone.now()
    return {
        "app_id": app_id,
        "recent": recent.summary if recent else "",
        "history": history.summary if history else "",
        "recent_updated_at": recent.updated_at if recent else None,
        "history_updated_at": history.updated_at if history else None,
        "opted_out": context_opted_out(user=user),
        "topics": [
            {
                "key": topic.key,
                "title": topic.title,
                "summary": topic.summary,
                "built_at": topic.built_at,
                "expires_at": topic.expires_at,
                "expired": topic.expires_at <= now,
            }
            for topic in topics
        ],
    }
