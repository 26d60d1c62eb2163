"""Inline exchange processing: each assistant reply becomes a retrievable turn-pair chunk.

Runs in the request, right after the reply is stored (after-message hook), so the exchange is
in the rag_store before the next user turn is answered. The chunk has the same shape as an
imported one (ingestion_app.chunking: reference frontmatter, contextual header, topics, chunk
id) with ``source_platform: local``, the session's raw log as ``source_file`` and the user's
ordinal message number as the pair number.

The request never waits on a slow model: with an LLM configured the header is asked for in a
worker thread and awaited for MNEMO_INLINE_HEADER_BUDGET_SECONDS; past that, the deterministic
local header is stored as a placeholder, the chunk is embedded on the user prompt alone, and
the model's header is written when that same call answers (`_late_header_apply`): the model is
asked once per chunk. Only when that call fails does `chunk_header_backfill` (a django-q2 task)
ask again, and a chunk whose call died with its process is found by the minute's resume sweep
(`chunk_headers_resume_stalled`). Offline the local header is instant and final.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, close_old_connections, transaction
from django.utils import timezone
from django_q.tasks import async_task

from ingestion_app.chunking.conversations import (
    Chunk,
    local_header,
    local_tags,
)
from ingestion_app.chunking.markdown import build_frontmatter, conversation_key, make_chunk_id
from ingestion_app.models import MemoryItem
from ingestion_app.parsers.base import Conversation, TurnPair
from ingestion_app.parsers.detect import LOCAL_MARKDOWN
from ingestion_app.services.headers import header_messages, headers_ask
from ingestion_app.services.memory_store import (
    MemoryScope,
    exchange_key,
    memory_item_create,
    memory_provenance,
)
from ingestion_app.services.pending_items import PendingItem, pending_items_store
from memory_site.providers import get_embedder, model_or_offline
from memory_site.providers.base import LLM, ProviderError
from memory_site.task_paths import BACKFILL_TASK
from memory_site.tokens import count_tokens
from mnemo_text.indexable import (
    is_app_task,
    memory_text_indexable,
    memory_text_is_boilerplate,
)
from mnemo_text.redaction import redact
from sessions_app.models import ChatSession, Message
from sessions_app.services.usage import usage_record_json

logger = logging.getLogger(__name__)

PLATFORM = "local"
TURN_PAIR_KIND = "turn_pair"
DEFAULT_AGENT_ID = "user"  # the reference's agent id for personal conversations
# Earlier prompts shown as prior context; one more is read to know whether there were more.
PRIOR_PROMPTS = 3


class HeaderStatus:
    LOCAL = "local"  # deterministic local header (offline, or the model failed on backfill)
    LLM = "llm"  # written by the model
    PENDING = "pending"  # local placeholder; the model's header is being backfilled


# Header calls run here so the request can stop waiting; a few threads are plenty because a
# call that outlives its budget is abandoned, and queued calls past the budget are cancelled.
HEADER_THREAD_PREFIX = "mnemo-inline-header"
_HEADER_POOL = concurrent.futures.ThreadPoolExecutor(
    max_workers=4, thread_name_prefix=HEADER_THREAD_PREFIX
)


@dataclass
class Exchange:
    session: ChatSession
    user_message: Message
    assistant_message: Message
    pair_number: int
    prior_prompts: list[str]  # earlier user prompts of the session, oldest first


# --------------------------------------------------------------------------------------------
# Hook
# --------------------------------------------------------------------------------------------


def exchange_index(*, message: Message) -> MemoryItem | None:
    """Store an assistant reply and its prompt as a turn-pair chunk (embedded on its own).

    The after-message hook (`ingestion_app.services.indexing.message_items_index`) does the
    same through `exchange_prepare`, sharing one embedder call with the reply's message item.
    """
    pending = exchange_prepare(message=message)
    return None if pending is None else pending_items_store([pending])[0]


def exchange_prepare(*, message: Message) -> PendingItem | None:
    """The turn-pair chunk an assistant reply completes, ready to embed and store.

    Only an assistant message directly following a user message makes a chunk (else None).
    Idempotent: the chunk id is derived from the session and pair number, so a second run gets
    the stored chunk back as `existing`. Holds no lock; the model call for the header is bounded
    by MNEMO_INLINE_HEADER_BUDGET_SECONDS. Model and embedder failures degrade to the
    placeholder path (local header now, the model's header and any missing embedding by task).
    """
    if message.role != Message.Role.ASSISTANT:
        return None
    exchange = exchange_load(message=message)
    if exchange is None or not exchange_indexable(exchange):
        return None
    conversation, chunk = exchange_chunk(exchange)
    existing = MemoryItem.objects.filter(chunk_id=chunk.chunk_id).first()
    if existing is not None:
        return PendingItem(existing=existing)

    topics = local_tags(chunk, conversation)
    header = ""
    late: list[concurrent.futures.Future] = []  # the model's header, still on its way

    def from_model(llm: LLM) -> tuple[tuple[str, list[str]] | None, str]:
        described, in_flight = _header_within_budget(
            llm=llm, chunk=chunk, conversation=conversation, exchange=exchange
        )
        if in_flight is not None:
            late.append(in_flight)
        return described, HeaderStatus.PENDING if described is None else HeaderStatus.LLM

    described, status = model_or_offline(from_model, lambda: (None, HeaderStatus.LOCAL))
    if described is not None:
        header, topics = described[0], described[1] or topics
    if not header:
        header = local_header(chunk, conversation, topics)
    chunk.header, chunk.topics = header, topics

    # Embedding Dilution: header + user prompt, never the reply; a placeholder header is left
    # out so the backfilled header, not the provisional one, shapes the final vector.
    embedding_text = chunk.user_text if status == HeaderStatus.PENDING else chunk.embedding_text()

    def store(embedding: list[float] | None, *, deferred: bool = False) -> MemoryItem | None:
        failed = embedding is None and not deferred
        if failed:
            logger.warning(
                "chunk %s stored without embedding; the backfill task embeds it", chunk.chunk_id
            )
        item = _chunk_store(
            exchange=exchange,
            conversation=conversation,
            chunk=chunk,
            status=status,
            embedding=embedding,
            embedding_text=embedding_text,
        )
        if item is not None and status == HeaderStatus.PENDING and late and not failed:
            # The model is still answering: its header is applied when it arrives, so the
            # backfill does not ask it the same question a second time.
            item_id, session = item.id, exchange.session
            transaction.on_commit(
                lambda: late[0].add_done_callback(
                    lambda future: _late_header_apply(item_id, session, future)
                )
            )
        elif item is not None and (status == HeaderStatus.PENDING or failed):
            item_id = item.id
            transaction.on_commit(lambda: _backfill_queue(item_id))
        return item

    return PendingItem(embedding_text=embedding_text, store=store)


def exchange_indexable(exchange: Exchange) -> bool:
    """Whether an exchange is stored as a turn-pair chunk (memory_store's rule, per side).

    Not when the reply is the offline "no model configured" reply or echoes the pack (the
    user's statement is kept by its own message item), nor when neither side says anything
    (a greeting answered by a greeting, a question answered by a question)."""
    reply = exchange.assistant_message
    if reply.is_no_model_reply or memory_text_is_boilerplate(reply.content_sanitized):
        return False
    if is_app_task(exchange.user_message.content_sanitized):
        return False  # a chat app's title or tags request, answered
    return memory_text_indexable(exchange.user_message.content_sanitized) or (
        memory_text_indexable(reply.content_sanitized)
    )


def exchange_load(*, message: Message) -> Exchange | None:
    """The exchange an assistant message completes, or None if it does not follow a prompt."""
    previous = (
        Message.objects.filter(session_id=message.session_id, id__lt=message.id)
        .only("id", "role", "content_sanitized", "created_at", "session_id", "user_id")
        .order_by("-id")
        .first()
    )
    if previous is None or previous.role != Message.Role.USER:
        return None
    earlier_users = Message.objects.filter(
        session_id=message.session_id, role=Message.Role.USER, id__lt=previous.id
    )
    prior = list(
        earlier_users.order_by("-id").values_list("content_sanitized", flat=True)[
            : PRIOR_PROMPTS + 1
        ]
    )
    pair_number = len(prior) + 1
    if len(prior) > PRIOR_PROMPTS:
        pair_number = earlier_users.count() + 1
    prior.reverse()
    return Exchange(
        session=message.session,
        user_message=previous,
        assistant_message=message,
        pair_number=pair_number,
        prior_prompts=prior,
    )


def exchange_chunk(exchange: Exchange) -> tuple[Conversation, Chunk]:
    """The chunking module's view of one live exchange (sanitized text, redacted title)."""
    session = exchange.session
    user_message, assistant_message = exchange.user_message, exchange.assistant_message
    pair = TurnPair(
        index=exchange.pair_number,
        user_text=user_message.content_sanitized,
        assistant_text=assistant_message.content_sanitized,
        user_at=user_message.created_at,
        assistant_at=assistant_message.created_at,
        model=assistant_message.model or None,
        message_ids=[str(user_message.id), str(assistant_message.id)],
    )
    first_prior = exchange.pair_number - len(exchange.prior_prompts)
    earlier = [
        TurnPair(index=first_prior + offset, user_text=text, assistant_text="")
        for offset, text in enumerate(exchange.prior_prompts)
    ]
    conversation = Conversation(
        platform=PLATFORM,
        format=LOCAL_MARKDOWN,
        conversation_id=str(session.id),
        source_file=f"{session.id}.md",
        title=redact(session.title) if session.title else None,
        model=assistant_message.model or None,
        pairs=[*earlier, pair],
    )
    key = conversation_key(
        namespace=str(session.user_id), platform=PLATFORM, conversation_id=str(session.id)
    )
    turn_range = str(exchange.pair_number)
    chunk = Chunk(
        chunk_id=make_chunk_id(
            platform=PLATFORM, key=key, turn_range=turn_range, timestamp=user_message.created_at
        ),
        conversation_key=key,
        pairs=[pair],
        turn_range=turn_range,
    )
    return conversation, chunk


def _chunk_store(
    *,
    exchange: Exchange,
    conversation: Conversation,
    chunk: Chunk,
    status: str,
    embedding,
    embedding_text: str,
) -> MemoryItem | None:
    session = exchange.session
    frontmatter = build_frontmatter(
        chunk, conversation, agent_id=session.agent_id or DEFAULT_AGENT_ID
    )
    content = chunk.exchange_markdown()
    metadata = {
        **frontmatter,
        "kind": TURN_PAIR_KIND,
        "session_id": str(session.id),
        "pair_number": exchange.pair_number,
        "header_status": status,
        "exchange_key": exchange_key(
            conversation_key=chunk.conversation_key, turn_range=chunk.turn_range
        ),
        "provenance": memory_provenance(
            source="chat", title=conversation.title or "", moment=exchange.user_message.created_at
        ),
    }
    if exchange.assistant_message.incomplete:
        metadata["incomplete"] = True
    try:
        with transaction.atomic():
            return memory_item_create(
                with_entities=False,  # pending_items_store extracts the reply's items at once
                scope=MemoryScope.of_session(session),
                source=MemoryItem.Source.CHUNK,
                content=content,
                header=chunk.header,
                embedding=embedding,
                embedding_text=embedding_text,
                topics=list(chunk.topics),
                metadata=metadata,
                chunk_id=chunk.chunk_id,
                source_message_ids=[exchange.user_message.id, exchange.assistant_message.id],
                token_count=exchange.user_message.token_count
                + exchange.assistant_message.token_count
                + count_tokens(chunk.header),
                occurred_at=exchange.user_message.created_at,
            )
    except IntegrityError:
        # The same exchange indexed concurrently: the first writer's chunk stands.
        return MemoryItem.objects.filter(chunk_id=chunk.chunk_id).first()


# --------------------------------------------------------------------------------------------
# Model headers
# --------------------------------------------------------------------------------------------


def _header_within_budget(
    *, llm: LLM, chunk: Chunk, conversation: Conversation, exchange: Exchange
) -> tuple[tuple[str, list[str]] | None, concurrent.futures.Future | None]:
    """The model's (header, topics) if it answers within the budget, else None and, when the
    call is still running, its future (the header is applied when it comes:
    `_late_header_apply`)."""
    session = exchange.session
    messages = header_messages([(chunk, conversation)])
    future = _HEADER_POOL.submit(headers_ask, llm, messages, count=1)
    try:
        answers = future.result(timeout=settings.MNEMO_INLINE_HEADER_BUDGET_SECONDS)
    except concurrent.futures.TimeoutError:
        logger.info("header for %s not ready within budget; placeholder stored", chunk.chunk_id)
        return None, (None if future.cancel() else future)
    except ProviderError as exc:
        logger.warning("header for %s failed (%s); placeholder stored", chunk.chunk_id, exc)
        return None, None
    usage_record_json(user=session.user, session=session, kind="header", result=answers.result)
    answer = answers.by_index.get(0)
    if answer is None:
        logger.warning("header for %s: the model gave none; placeholder stored", chunk.chunk_id)
    return answer, None


# Per run of the resume sweep: chunks whose late header never came.
STALLED_PER_RUN = 200


def chunk_headers_resume_stalled(*, now=None) -> int:
    """Queue the backfill of chunks still waiting for a header after their model call must
    have ended (its timeout and retries, plus a minute): the process that held the call died.
    Returns how many were queued; the backfill's conditional update makes a late duplicate a
    no-op."""
    stalled_after = settings.LLM_TIMEOUT_SECONDS * (settings.LLM_MAX_RETRIES + 1) + 60
    cutoff = (now or timezone.now()) - timedelta(seconds=stalled_after)
    ids = list(
        MemoryItem.objects.filter(
            source=MemoryItem.Source.CHUNK,
            metadata__header_status=HeaderStatus.PENDING,
            updated_at__lt=cutoff,
        )
        .order_by("id")
        .values_list("id", flat=True)[:STALLED_PER_RUN]
    )
    for item_id in ids:
        _backfill_queue(item_id)
    return len(ids)


def _backfill_queue(item_id: int) -> None:
    async_task(BACKFILL_TASK, item_id, task_name=f"chunk-backfill-{item_id}")


def _late_header_apply(item_id: int, session, future: concurrent.futures.Future) -> None:
    """A header call that outran the request's budget has answered: record its usage and
    write its header (`chunk_header_backfill` with the answer). When it failed or gave
    nothing, the backfill task asks again. Runs on the header pool's thread."""
    try:
        try:
            answers = future.result()
        except Exception as exc:  # noqa: BLE001 - ProviderError or worse: the task retries
            logger.info("late header of chunk item %s failed (%s); backfill queued", item_id, exc)
            _backfill_queue(item_id)
            return
        usage_record_json(user=session.user, session=session, kind="header", result=answers.result)
        answer = answers.by_index.get(0)
        if answer is None:
            _backfill_queue(item_id)
            return
        chunk_header_backfill(memory_item_id=item_id, answer=answer)
    except Exception:  # noqa: BLE001 - a callback must not raise into the pool
        logger.exception("applying the late header of chunk item %s failed", item_id)
    finally:
        # On the pool's thread its connection is its own; an answer that came before the
        # commit runs this on the committing thread, whose connection is still in use.
        if threading.current_thread().name.startswith(HEADER_THREAD_PREFIX):
            close_old_connections()


# --------------------------------------------------------------------------------------------
# Backfill
# --------------------------------------------------------------------------------------------


def _exchange_texts(item: MemoryItem) -> tuple[str, str]:
    """(user prompt, reply) of a chunk: from its messages, or from its stored exchange text."""
    texts = dict(
        Message.objects.filter(id__in=item.source_message_ids).values_list(
            "role", "content_sanitized"
        )
    )
    if Message.Role.USER in texts:
        return texts[Message.Role.USER], texts.get(Message.Role.ASSISTANT, "")
    # Messages purged by retention: the chunk keeps the exchange it was built from.
    body = item.content.removeprefix("**User:**\n")
    user_text, _, reply = body.partition("\n\n**Assistant:**\n")
    return user_text, reply


def _backfill_chunk(item: MemoryItem, *, user_text: str, reply: str) -> tuple[Chunk, Conversation]:
    """The header generator's view of a stored chunk (its text, title, platform and date)."""
    metadata = item.metadata
    pair = TurnPair(
        index=int(metadata.get("pair_number") or 1),
        user_text=user_text,
        assistant_text=reply,
        user_at=item.occurred_at,
    )
    conversation = Conversation(
        platform=metadata.get("source_platform") or PLATFORM,
        format=LOCAL_MARKDOWN,
        conversation_id=str(metadata.get("session_id") or ""),
        source_file=metadata.get("source_file") or "",
        title=metadata.get("conversation_title") or None,
        pairs=[pair],
    )
    turn_range = metadata.get("turn_range") or str(pair.index)
    chunk = Chunk(
        chunk_id=item.chunk_id or "", conversation_key="", pairs=[pair], turn_range=turn_range
    )
    return chunk, conversation


def _backfill_header(
    llm: LLM, item: MemoryItem, *, user_text: str, reply: str
) -> tuple[str, list[str]] | None:
    """The model's (header, topics) for a stored chunk, with its usage row; None on failure."""
    chunk, conversation = _backfill_chunk(item, user_text=user_text, reply=reply)
    try:
        answers = headers_ask(llm, header_messages([(chunk, conversation)]), count=1)
    except ProviderError as exc:
        logger.warning("header backfill of chunk %s failed: %s", item.id, exc)
        return None
    usage_record_json(
        user=item.user,
        session=item.chat_session,
        kind="header",
        result=answers.result,
        app_id=item.app_id,
    )
    answer = answers.by_index.get(0)
    if answer is None:
        logger.warning("header backfill of chunk %s: the model gave none", item.id)
    return answer


def chunk_header_backfill(
    *, memory_item_id: int, answer: tuple[str, list[str]] | None = None
) -> str:
    """Replace a chunk's placeholder header with the model's and embed header + user prompt.

    `answer`: the model's (header, topics) when the caller already has it (a call that
    outran the request's budget), so the model is not asked again.

    Also embeds a chunk whose embedding failed in the request. Idempotent: a chunk whose
    header is final and embedding present is left alone ("noop"); the write is a conditional
    update on the header status read at the start, so two runs cannot both apply. If the model
    fails, the local placeholder becomes the final header (status "local"): a chunk is never
    left without a header. Raises ProviderError only when the embedder fails.
    """
    item = (
        MemoryItem.objects.select_related("chat_session", "user")
        .filter(id=memory_item_id, source=MemoryItem.Source.CHUNK)
        .first()
    )
    if item is None:
        return "missing"
    status = item.metadata.get("header_status", HeaderStatus.LOCAL)
    if status != HeaderStatus.PENDING and item.embedding is not None:
        return "noop"
    user_text, reply = _exchange_texts(item)
    header, topics = item.header, list(item.topics)
    new_status = status
    if status == HeaderStatus.PENDING:
        new_status = HeaderStatus.LOCAL
        if answer is None:
            answer = model_or_offline(
                lambda llm: _backfill_header(llm, item, user_text=user_text, reply=reply),
                lambda: None,
            )
        if answer is not None:
            header, topics = answer[0], answer[1] or topics
            new_status = HeaderStatus.LLM
    embedding_text = f"{header}\n\n{user_text}".strip()
    embedding = get_embedder().embed([embedding_text])[0]
    metadata = {**item.metadata, "header_status": new_status, "topics": topics}
    updated = MemoryItem.objects.filter(
        id=item.id, metadata__header_status=item.metadata.get("header_status")
    ).update(
        header=header,
        topics=topics,
        metadata=metadata,
        embedding=embedding,
        embedding_text=embedding_text,
        token_count=count_tokens(user_text) + count_tokens(reply) + count_tokens(header),
        updated_at=timezone.now(),
    )
    return f"backfilled ({new_status})" if updated else "noop"
