"""Consolidation: fold the oldest half of a long session into the user's long-term memory.

When the messages of a session not yet consolidated pass MNEMO_CONSOLIDATION_TOKENS, the oldest
half (by tokens) is summarized into a summary memory (MemoryItem source=summary,
metadata.kind="consolidation", with its embedding and the ids of the messages it covers), and
the session's high-water mark moves past them. The check runs in the request after every
stored message and costs two indexed reads; the work itself runs in a django-q2 task.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone
from django_q.tasks import async_task

from context_app.models import SessionConsolidation
from context_app.services.summaries import summary_header, transcript_digest, turns_of
from ingestion_app.models import MemoryItem
from ingestion_app.services.memory_store import MemoryScope, memory_item_create
from memory_site.providers import get_embedder
from memory_site.task_paths import CONSOLIDATION_TASK
from mnemo_text.redaction import redact
from sessions_app.models import ChatSession, Message

logger = logging.getLogger(__name__)

CONSOLIDATION_KIND = "consolidation"
CONSOLIDATION_MAX_CHARS = 1200
# A queued task that has not run after this long is presumed lost and may be queued again.
QUEUE_CLAIM_TIMEOUT = timedelta(minutes=10)
# A burst of huge messages may need several rounds; each round halves what is left.
MAX_ROUNDS = 6


def _live_tokens(*, session_id, high_water_message_id: int) -> int:
    return (
        Message.objects.filter(session_id=session_id, id__gt=high_water_message_id).aggregate(
            total=Sum("token_count")
        )["total"]
        or 0
    )


def consolidation_check(*, message: Message) -> bool:
    """After-message hook: queue consolidation once the session's live tokens pass the budget.

    Never does the work in the request. At most one task is queued per session at a time:
    the claim is a conditional UPDATE of the session's consolidation row (`queued_at`), so
    concurrent messages cannot queue twice. Returns whether a task was queued.
    """
    budget = settings.MNEMO_CONSOLIDATION_TOKENS
    if budget <= 0:
        return False
    state = (
        SessionConsolidation.objects.filter(session_id=message.session_id)
        .values("high_water_message_id", "queued_at")
        .first()
    )
    now = timezone.now()
    stale_before = now - QUEUE_CLAIM_TIMEOUT
    if state and state["queued_at"] and state["queued_at"] > stale_before:
        return False
    high_water = state["high_water_message_id"] if state else 0
    if _live_tokens(session_id=message.session_id, high_water_message_id=high_water) <= budget:
        return False
    if state is None:
        SessionConsolidation.objects.get_or_create(
            session_id=message.session_id, defaults={"user_id": message.user_id}
        )
    claimed = SessionConsolidation.objects.filter(
        Q(queued_at__isnull=True) | Q(queued_at__lte=stale_before),
        session_id=message.session_id,
    ).update(queued_at=now)
    if not claimed:
        return False
    session_id = str(message.session_id)
    transaction.on_commit(
        lambda: async_task(CONSOLIDATION_TASK, session_id, task_name=f"consolidate-{session_id}")
    )
    return True


def _oldest_half(messages: list[Message]) -> list[Message]:
    """The oldest messages holding half of the tokens, ending after a reply, never all of them."""
    total = sum(message.token_count for message in messages)
    picked: list[Message] = []
    used = 0
    for index, message in enumerate(messages[:-1]):
        picked.append(message)
        used += message.token_count
        if used * 2 >= total:
            following = messages[index + 1] if index + 1 < len(messages) - 1 else None
            # Keep a question with its answer: a summary of half an exchange is misleading.
            if (
                message.role == Message.Role.USER
                and following is not None
                and following.role == Message.Role.ASSISTANT
            ):
                picked.append(following)
            break
    return picked


def session_consolidate(*, session_id) -> list[MemoryItem]:
    """Summarize the oldest half of a session's live messages while they exceed the budget.

    Idempotent: each round re-reads the high-water mark under a row lock before writing, and a
    round whose range was already consolidated by another worker writes nothing. Model and
    embedder calls happen outside the lock. Raises ProviderError when the model fails (the
    claim is released so the next message can queue a new attempt).
    """
    session = ChatSession.objects.select_related("user").filter(id=session_id).first()
    if session is None:
        return []
    state, _ = SessionConsolidation.objects.get_or_create(
        session=session, defaults={"user_id": session.user_id}
    )
    created: list[MemoryItem] = []
    try:
        for _round in range(MAX_ROUNDS):
            progressed, item = _consolidate_once(
                session=session, high_water=state.high_water_message_id
            )
            if not progressed:
                break
            if item is not None:
                created.append(item)
            state.refresh_from_db()
    except Exception as exc:
        SessionConsolidation.objects.filter(session=session).update(
            queued_at=None, last_error=f"{type(exc).__name__}: {exc}"[:800]
        )
        raise
    SessionConsolidation.objects.filter(session=session).update(queued_at=None, last_error="")
    return created


def _consolidate_once(*, session: ChatSession, high_water: int) -> tuple[bool, MemoryItem | None]:
    """One round: (whether the high-water mark moved, the summary memory written if any).

    A range with nothing summarizable (greetings only) still moves the mark, so the live
    window keeps shrinking.
    """
    budget = settings.MNEMO_CONSOLIDATION_TOKENS
    live = list(
        Message.objects.filter(session=session, id__gt=high_water)
        .only("id", "role", "model", "content_sanitized", "token_count", "created_at")
        .order_by("id")
    )
    if sum(message.token_count for message in live) <= budget or len(live) < 2:
        return False, None
    span = _oldest_half(live)
    turns = turns_of(span)
    digest = transcript_digest(
        turns=turns,
        max_chars=CONSOLIDATION_MAX_CHARS,
        user=session.user,
        session=session,
        want_title=False,
    )
    summary = digest.summary.strip()
    first, last = span[0], span[-1]
    title = redact(session.title)
    header = summary_header(
        title=title, date=first.created_at, what="an earlier part of the conversation"
    )
    embedding_text = f"{header}\n\n{summary}"
    embedding = get_embedder().embed([embedding_text])[0] if summary else None
    with transaction.atomic():
        state = SessionConsolidation.objects.select_for_update().get(session=session)
        if state.high_water_message_id != high_water:
            return False, None  # another worker consolidated this range first
        item = None
        if summary:
            item = memory_item_create(
                scope=MemoryScope.of_session(session),
                source=MemoryItem.Source.SUMMARY,
                content=summary,
                header=header,
                embedding=embedding,
                embedding_text=embedding_text,
                metadata={
                    "kind": CONSOLIDATION_KIND,
                    "session_id": str(session.id),
                    "first_message_id": first.id,
                    "last_message_id": last.id,
                    "message_count": len(span),
                    "tokens_summarized": sum(message.token_count for message in span),
                    "model": digest.model,
                    "from": first.created_at.isoformat(),
                    "to": last.created_at.isoformat(),
                },
                source_message_ids=[message.id for message in span],
                occurred_at=last.created_at,
            )
        state.high_water_message_id = last.id
        state.consolidations += 1
        state.consolidated_tokens += sum(message.token_count for message in span)
        state.save(
            update_fields=[
                "high_water_message_id",
                "consolidations",
                "consolidated_tokens",
                "updated_at",
            ]
        )
    if item is None:
        logger.info(
            "session %s: messages %s-%s had nothing to summarize", session.id, first.id, last.id
        )
    return True, item
