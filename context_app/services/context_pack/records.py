"""Recording a built context pack (the injection log row and the session's pack state) and
reusing the last one when nothing it depends on changed.
"""

from __future__ import annotations

import functools
import json

from django.db import connection, transaction

from context_app.models import InjectionLog
from context_app.services.context_pack.build import METADATA_KEY, Deadline, transaction_configure
from context_app.services.context_pack.segments import (
    ContextPack,
    Segment,
)
from context_app.services.topics import (
    TopicChoice,
)
from sessions_app.models import ChatSession, Message


def pack_record(
    *,
    session: ChatSession,
    user_message: Message | None,
    pack: ContextPack,
    error: str = "",
    state: dict | None = None,
    in_build: bool = False,
    defer: bool = False,
) -> ContextPack:
    """Write the injection log row (and the session's context state when given) in one
    transaction: the build's own (`in_build`, already configured) or a new one, committed
    asynchronously. `defer`: write nothing now; `pack.pending_record` does it later, in a
    transaction of its own."""
    if defer:
        pack.pending_record = functools.partial(
            pack_record,
            session=session,
            user_message=user_message,
            pack=pack,
            error=error,
            state=state,
        )
        return pack
    with transaction.atomic(savepoint=not in_build):
        if not in_build:
            transaction_configure(statement_timeout_ms=None)
        log = InjectionLog.objects.create(
            session=session,
            user_id=session.user_id,
            user_message=user_message,
            turn_number=pack.turn_number,
            status=pack.status,
            reason=pack.reason,
            error=error[:2000],
            pack_text=pack.text,
            pack_hash=pack.hash,
            pack_chars=len(pack.text),
            pack_tokens=pack.tokens,
            segments=[segment.summary() for segment in pack.segments],
            memories=pack.memories,
            topic_key=pack.topic.key if pack.topic else "",
            topic_title=pack.topic.title if pack.topic else "",
            topic_score=pack.topic.score if pack.topic else None,
            topic_source=pack.topic.source if pack.topic else "",
            elapsed_ms=pack.elapsed_ms,
            embedding_ms=pack.embedding_ms,
            skipped=pack.skipped,
        )
        if state is not None:
            state = {**state, "log_id": log.id}
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {ChatSession._meta.db_table} SET metadata = metadata || %s::jsonb WHERE id = %s",
                    [
                        _json({METADATA_KEY: state, "last_context_hash": pack.hash}),
                        session.id,
                    ],
                )
            session.metadata = {
                **(session.metadata or {}),
                METADATA_KEY: state,
                "last_context_hash": pack.hash,
            }
    pack.injection_log_id = log.id
    return pack


def _json(value: dict) -> str:
    return json.dumps(value, default=str)


def pack_reuse(
    *,
    session,
    user_message,
    state: dict,
    turn: int,
    reason: str,
    deadline: Deadline,
    defer: bool = False,
    skipped: list[str] | None = None,
    memories: list[dict] | None = None,
) -> ContextPack | None:
    """The last pack again (its log row holds the text), recorded for this turn; None when
    that row is gone. `skipped`: the parts this turn's memory match left out; `memories`:
    this turn's match of the same memories (which of them were carried over from earlier
    turns and which found again), default the last pack's."""
    previous = InjectionLog.objects.filter(id=state["log_id"], session=session).first()
    if previous is None:
        return None
    pack = ContextPack(
        status=InjectionLog.Status.REUSED,
        reason=reason,
        turn_number=turn,
        text=previous.pack_text,
        hash=previous.pack_hash,
        segments=[
            Segment(
                item["name"],
                "",
                item.get("truncated", False),
                chars=item.get("chars", 0),
                hash=item.get("hash", ""),
                entry_ids=item.get("entry_ids", []),
            )
            for item in previous.segments
        ],
        topic=TopicChoice.from_dict(state.get("topic")),
        memories=previous.memories if memories is None else memories,
        tokens=previous.pack_tokens,
        elapsed_ms=round(deadline.elapsed_ms(), 2),
        skipped=list(skipped or []),
    )
    return pack_record(session=session, user_message=user_message, pack=pack, defer=defer)
