"""The entry point of a turn's context pack: `prepare_context` decides whether to reuse,
rebuild or skip (refresh), runs the build within its latency budget (by leaving parts out, see
`build`), records it, and never raises: a failed build (a database error) gives an empty pack
and the reply goes out unaugmented.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from context_app.models import ContextSettings, InjectionLog
from context_app.services.context_pack.build import (
    CARRIED_KEY,
    METADATA_KEY,
    Deadline,
    QueryEmbedding,
    carried_state,
    memories_match,
    memory_ids_of,
    pack_build,
    pack_profile,
    pack_query,
    statement_timeout_restore,
    transaction_configure,
)
from context_app.services.context_pack.records import pack_record, pack_reuse
from context_app.services.context_pack.refresh import (
    opted_out_by_environment,
    refresh_decision,
    turn_state,
)
from context_app.services.context_pack.segments import (
    PROFILE_SEGMENT,
    ContextPack,
    max_pack_tokens,
    pack_hash,
)
from context_app.services.topics import (
    TopicChoice,
)
from memory_site import metrics
from memory_site.tokens import count_tokens
from sessions_app.models import ChatSession, Message

logger = logging.getLogger("context_app.services.context_pack")


def prepare_context(
    *,
    session: ChatSession,
    user_message: Message | None = None,
    query: str | None = None,
    conversation_tokens: int = 0,
    context_settings: ContextSettings | None = None,
    query_embedding: QueryEmbedding | None = None,
    defer_record: bool = False,
) -> ContextPack:
    """The context pack for the current turn of `session` (never raises).

    Call after the turn's user message is stored (the turn number counts it). `query` is the
    text memories are matched against (default: the user message's redacted text);
    `conversation_tokens` (messages and attachments sent with the pack) sizes the token
    ceiling. Skips when augmentation is disabled, the user opted out or the session has fewer
    than `min_user_turns` user turns. Reuses the last pack until the refresh cadence says
    otherwise (a changed topic override always rebuilds). Every built or reused pack gets an
    InjectionLog row and the session metadata keeps {"context": {...}, "last_context_hash"}.
    A build that would run over `latency_budget_ms` leaves parts out (keyword-only memories,
    no known entities) and names them in `pack.skipped`; database errors and a failed build
    give status "failed", are logged, and leave the turn unaugmented. `query_embedding` (from
    `query_embedding_start`) is used when it embeds this turn's query, else cancelled. With
    `defer_record` the InjectionLog row and the session state are written only when the
    caller runs `context_pack_record(pack)` (after the reply has started); until then
    `pack.injection_log_id` is None.
    """
    context_settings = context_settings or ContextSettings.current()
    deadline = Deadline(context_settings.latency_budget_ms)
    turn = 0
    try:
        if not context_settings.augmentation_enabled:
            pack = ContextPack(status="skipped", reason="disabled")
        elif opted_out_by_environment(session.user):
            pack = ContextPack(status="skipped", reason="opted_out")
        else:
            turn, opted_out, override = turn_state(session)
            if opted_out:
                pack = ContextPack(status="skipped", reason="opted_out", turn_number=turn)
            elif turn < context_settings.min_user_turns:
                pack = ContextPack(status="skipped", reason="too_few_turns", turn_number=turn)
            else:
                if query is None:
                    query = user_message.content_sanitized if user_message else ""
                query = pack_query(query)
                pack = _prepare(
                    session=session,
                    user_message=user_message,
                    query=query,
                    query_future=(
                        query_embedding.future
                        if query_embedding is not None and query_embedding.text == query
                        else None
                    ),
                    defer_record=defer_record,
                    turn=turn,
                    override=override,
                    conversation_tokens=conversation_tokens,
                    context_settings=context_settings,
                    deadline=deadline,
                )
    except Exception as exc:  # noqa: BLE001 - any failure means "answer without augmentation"
        pack = _failed(
            session=session,
            user_message=user_message,
            turn=turn,
            exc=exc,
            deadline=deadline,
            defer_record=defer_record,
        )
    finally:
        if query_embedding is not None:
            query_embedding.cancel()  # unused (skipped, another query): not worth computing
    metrics.PACK_SECONDS.labels(str(pack.status)).observe(deadline.elapsed_ms() / 1000)
    for part in pack.skipped:
        metrics.PACK_PARTS_SKIPPED.labels(part.split(":", 1)[0]).inc()
    if context_settings.verbose_logging:
        logger.info(
            "context session=%s turn=%d status=%s reason=%s chars=%d topic=%s elapsed_ms=%.1f",
            session.id,
            pack.turn_number,
            pack.status,
            pack.reason,
            len(pack.text),
            pack.topic.key if pack.topic else "-",
            pack.elapsed_ms,
        )
    return pack


def _prepare(*, context_settings, **arguments) -> ContextPack:
    """`_match_and_build` in one transaction: the memory match, reads, assembly and the log
    write share it (fewer round trips; the latency budget bounds every statement of it). A
    caller's outer transaction would keep our statement_timeout: it is put back at the end."""
    restore_timeout = connection.in_atomic_block
    with transaction.atomic():
        previous_timeout = transaction_configure(
            statement_timeout_ms=context_settings.latency_budget_ms
        )
        pack = _match_and_build(context_settings=context_settings, **arguments)
        if restore_timeout:
            statement_timeout_restore(previous_timeout)
    return pack


def _match_and_build(
    *,
    session,
    user_message,
    query,
    turn,
    override,
    conversation_tokens,
    context_settings,
    deadline,
    query_future,
    defer_record,
):
    now = timezone.now()
    state = dict((session.metadata or {}).get(METADATA_KEY) or {})
    override_choice = (
        f"{override.source}:{override.key}:{override.title}" if override is not None else ""
    )
    decision = refresh_decision(
        state=state, turn=turn, override=override_choice, context_settings=context_settings, now=now
    )
    matched = None
    profile = None
    if decision is None:
        # The summary segments keep their cadence, but memories are matched every turn: the
        # last pack is reused only when its memory lines would not change.
        matched = memories_match(
            session=session,
            query=query,
            deadline=deadline,
            context_settings=context_settings,
            query_future=query_future,
        )
        if memory_ids_of(matched[0]) != state.get("memory_ids", []):
            decision = "memories_changed"
        else:
            profile = pack_profile(session=session, context_settings=context_settings)
            if profile.entry_ids != state.get("profile_ids", []):
                decision = "profile_changed"
    if decision is None:
        reused = pack_reuse(
            session=session,
            user_message=user_message,
            state=state,
            turn=turn,
            reason="not_due",
            deadline=deadline,
            defer=defer_record,
            skipped=matched[2],
            memories=[meta for _, meta in matched[0]],
        )
        if reused is not None:
            return reused
        decision = "first_build"
    return _build_and_record(
        session=session,
        user_message=user_message,
        query=query,
        turn=turn,
        state=state,
        decision=decision,
        now=now,
        previous_topic=TopicChoice.from_dict(state.get("topic")),
        override=override,
        override_choice=override_choice,
        conversation_tokens=conversation_tokens,
        context_settings=context_settings,
        deadline=deadline,
        matched=matched,
        query_future=query_future,
        defer_record=defer_record,
        profile=profile,
    )


def _build_and_record(
    *,
    session,
    user_message,
    query,
    turn,
    state,
    decision,
    now,
    previous_topic,
    override,
    override_choice,
    conversation_tokens,
    context_settings,
    deadline,
    matched=None,
    query_future=None,
    defer_record=False,
    profile=None,
) -> ContextPack:
    """The rebuild path, inside the build transaction: build, compare with the last pack's
    hash (an identical pack is marked reused), record."""
    skipped: list[str] = []
    segments, memories, text, topic, topic_reason, embedding_ms, memory_lines = pack_build(
        session=session,
        turn=turn,
        query=query,
        previous_topic=previous_topic,
        override=override,
        max_tokens=max_pack_tokens(
            conversation_tokens=conversation_tokens, context_settings=context_settings
        ),
        context_settings=context_settings,
        deadline=deadline,
        matched=matched,
        query_future=query_future,
        skipped=skipped,
        profile=profile,
    )
    digest = pack_hash(text) if text else ""
    unchanged = bool(digest) and digest == state.get("hash")
    reason = decision
    if topic_reason == "drift":
        reason = "topic_changed"
    pack = ContextPack(
        status=InjectionLog.Status.REUSED if unchanged else InjectionLog.Status.BUILT,
        reason=f"{reason}:unchanged" if unchanged else reason,
        turn_number=turn,
        text=text,
        hash=digest,
        segments=segments,
        topic=topic,
        memories=memories,
        tokens=count_tokens(text),
        elapsed_ms=round(deadline.elapsed_ms(), 2),
        embedding_ms=round(embedding_ms, 2),
        skipped=skipped,
    )
    new_state = {
        "hash": digest,
        "built_at": now.isoformat(),
        "built_turn": turn,
        "topic": topic.as_dict() if topic else None,
        "override": override_choice,
        "chars": len(text),
        "memory_ids": memory_ids_of(memory_lines),
        "profile_ids": next(
            (segment.entry_ids for segment in segments if segment.name == PROFILE_SEGMENT), []
        ),
        CARRIED_KEY: carried_state(memory_lines),
    }
    return pack_record(
        session=session,
        user_message=user_message,
        pack=pack,
        state=new_state,
        in_build=True,
        defer=defer_record,
    )


def _failed(
    *,
    session,
    user_message,
    turn: int,
    exc: Exception,
    deadline: Deadline,
    defer_record: bool = False,
) -> ContextPack:
    reason = "database_error" if isinstance(exc, DatabaseError) else "error"
    if isinstance(exc, DatabaseError):
        logger.warning("context: build failed for session %s (%s): %s", session.id, reason, exc)
    else:
        logger.exception("context: build failed for session %s", session.id)
    pack = ContextPack(
        status=InjectionLog.Status.FAILED,
        reason=reason,
        turn_number=turn,
        elapsed_ms=round(deadline.elapsed_ms(), 2),
    )
    try:
        pack_record(
            session=session,
            user_message=user_message,
            pack=pack,
            error=str(exc),
            defer=defer_record,
        )
    except Exception:  # noqa: BLE001 - the database may be what failed
        logger.warning("context: could not record the failed build for session %s", session.id)
    return pack


def context_pack_record(pack: ContextPack) -> ContextPack:
    """Write what `prepare_context(defer_record=True)` left pending: the InjectionLog row (and
    `pack.injection_log_id`) and the session's context state, in one transaction.

    Runs once (a second call, or a pack with nothing pending, is a no-op). Never raises: the
    reply has gone out with the pack already, so a failed write is logged and dropped.
    """
    pending, pack.pending_record = pack.pending_record, None
    if pending is None:
        return pack
    try:
        pending()
    except Exception:  # noqa: BLE001 - the audit row must never fail the reply it describes
        logger.exception("context: could not record the injected pack (%s)", pack.status)
    return pack
