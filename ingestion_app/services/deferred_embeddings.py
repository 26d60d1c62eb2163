"""Vectors filled in after the response: the after-message items are embedded off the request.

Why: after an assistant reply the embedder was ~20 of the request's ~48 ms p95. The
hook now inserts the message's items with embedding NULL (keyword-searchable at once: the
search vector is generated on insert), answers, and once the transaction has committed
(`transaction.on_commit`) hands their ids to one daemon thread of the same process. That thread
embeds whatever is queued (on one core: `_embed_on_one_core`) and writes the vectors in one
UPDATE, which skips an item deleted, edited or embedded meanwhile
(`memory_items_embedding_fill`).

A search of the same user in the same process first waits (at most READ_WAIT_SECONDS) for
that user's queued items, so what was said just before is found by vector as it was when it
was embedded in the request. The context pack waits (within its latency budget) only for the
items of the user's chats that have ended (closed, or closing): ending a chat is the boundary
after which the next chat's first pack sees all of it. A chat still open is read as of the
items already embedded; its exchange of the last moments joins a few milliseconds later.

Held back while a reply is being started: the thread embeds nothing new while a
call builds its pack, until its first token (`embeddings_hold`; at most HOLD_MAX_SECONDS per
text, and not past HOLD_BACKLOG_MAX queued items), so on a 2-core machine the previous
reply's vectors do not take the CPU from the next call's pack. A waiting read lifts the hold.

Nothing stays without a vector: if the process dies with items queued, the queue is full, or
the embedder fails, the one-minute schedule `mnemo-embed-missing` (`memory_items_embed_missing`)
embeds the chat items (turn-pair chunks, message items, their passages; anything written from
a chat session) still NULL after a grace period. `manage.py reembed --only-missing` does the
same for every row, imports stored with ``embed=False`` included.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import ClassVar

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from ingestion_app.models import MemoryItem
from memory_site.providers import get_embedder
from memory_site.providers.base import ProviderError

logger = logging.getLogger(__name__)

# Items waiting for the thread, at most; past this they are left to the schedule rather than
# ever making a request wait (a burst on a slow embedder must not grow memory without bound).
QUEUE_MAX_ITEMS = 2000
# Items the schedule leaves alone after their insert: the thread of the process that stored
# them normally embeds them within milliseconds; double work would be harmless, only wasted.
MISSING_GRACE_SECONDS = 60
# How long a search waits, at most, for the vectors of its user's items still queued in this
# process (read your own writes; normally a few milliseconds, as long as one embedder call).
READ_WAIT_SECONDS = 0.5
# How long the thread holds one text back for calls waiting for their first token, at most (so
# steady traffic slows the vectors down but never starves them).
HOLD_MAX_SECONDS = 0.25
# Past this many queued items the thread no longer holds back at all: under steady traffic some
# call is nearly always before its first token, and the vectors must keep up.
HOLD_BACKLOG_MAX = 64
# How long a process stopping gracefully waits for its queued items.
SHUTDOWN_WAIT_SECONDS = 5.0
# Items the schedule embeds per run (one minute apart); a backlog drains over several runs.
MISSING_PER_RUN = 512


@dataclass(frozen=True)
class EmbeddingJob:
    """An item to embed, with what it was stored with: the vector is written only if the item
    still has no vector and the same text (an edit in between wins)."""

    item_id: int
    user_id: int
    session_id: str  # its chat session ("" for none): a pack never waits for its own session's
    text: str
    embedding_text: str
    content_hash: str

    # What `of` reads: load items with .only(*FIELDS), or each deferred field costs a query.
    FIELDS: ClassVar[tuple[str, ...]] = (
        "id",
        "user_id",
        "chat_session_id",
        "content",
        "embedding_text",
        "content_hash",
    )

    @classmethod
    def of(cls, item: MemoryItem) -> EmbeddingJob:
        return cls(
            item_id=item.id,
            user_id=item.user_id,
            session_id=str(item.chat_session_id or ""),
            text=item.embedding_text or item.content,
            embedding_text=item.embedding_text,
            content_hash=item.content_hash,
        )


class _Backlog:
    """The process's queue of jobs, its one worker thread and the count of unfinished jobs."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        # Also run in a forked child (a task worker): it inherits neither the thread nor a
        # usable lock, and its parent's queued jobs are the parent's to finish.
        self.jobs: queue.SimpleQueue[EmbeddingJob] = queue.SimpleQueue()
        self.unfinished = 0
        # user -> chat session -> unfinished jobs
        self.unfinished_by_user: dict[int, dict[str, int]] = {}
        self.changed = threading.Condition()
        self.thread: threading.Thread | None = None
        self.holds = 0  # calls waiting for their first token (`embeddings_hold`)
        self.readers = 0  # reads waiting for vectors (`wait`): they lift the holds

    def add(self, jobs: Sequence[EmbeddingJob]) -> None:
        with self.changed:
            if self.unfinished + len(jobs) > QUEUE_MAX_ITEMS:
                logger.warning(
                    "%d items not queued for embedding (backlog full); the schedule embeds them",
                    len(jobs),
                )
                return
            self.unfinished += len(jobs)
            for job in jobs:
                sessions = self.unfinished_by_user.setdefault(job.user_id, {})
                sessions[job.session_id] = sessions.get(job.session_id, 0) + 1
                self.jobs.put(job)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(
                    target=self.run, args=(self.jobs,), name="mnemo-embed-after", daemon=True
                )
                self.thread.start()

    def run(self, jobs: queue.SimpleQueue[EmbeddingJob]) -> None:
        size = max(1, int(settings.EMBEDDING_BATCH_SIZE))
        while True:
            batch = [jobs.get()]
            while len(batch) < size:
                try:
                    batch.append(jobs.get_nowait())
                except queue.Empty:
                    break
            try:
                memory_items_embedding_fill(batch, before_each=self.held_back)
            except ProviderError as exc:
                logger.warning(
                    "embedding %d items after the response failed (%s); the schedule embeds them",
                    len(batch),
                    exc,
                )
            except Exception:
                logger.exception(
                    "embedding %d items after the response failed; the schedule embeds them",
                    len(batch),
                )
            finally:
                # As after a request: back to the pool, or kept while CONN_MAX_AGE allows.
                close_old_connections()
                with self.changed:
                    self.unfinished -= len(batch)
                    for job in batch:
                        sessions = self.unfinished_by_user.get(job.user_id, {})
                        left = sessions.get(job.session_id, 1) - 1
                        if left > 0:
                            sessions[job.session_id] = left
                        else:
                            sessions.pop(job.session_id, None)
                        if not sessions:
                            self.unfinished_by_user.pop(job.user_id, None)
                    self.changed.notify_all()

    def pending(
        self, user_id: int | None, except_session: str, only_sessions: frozenset[str] | None
    ) -> int:
        if user_id is None:
            return self.unfinished
        sessions = self.unfinished_by_user.get(user_id, {})
        return sum(
            count
            for session, count in sessions.items()
            if session != except_session and (only_sessions is None or session in only_sessions)
        )

    def pending_sessions(self, user_id: int, except_session: str) -> set[str]:
        with self.changed:
            sessions = self.unfinished_by_user.get(user_id, {})
            return {session for session in sessions if session and session != except_session}

    def wait(
        self,
        timeout: float,
        user_id: int | None = None,
        except_session: str = "",
        only_sessions: frozenset[str] | None = None,
    ) -> bool:
        deadline = time.monotonic() + timeout
        with self.changed:
            if self.pending(user_id, except_session, only_sessions) == 0:
                return True
            self.readers += 1
            self.changed.notify_all()
            try:
                while self.pending(user_id, except_session, only_sessions) > 0:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self.changed.wait(remaining)
            finally:
                self.readers -= 1
        return True

    def hold(self, change: int) -> None:
        with self.changed:
            self.holds += change
            if change < 0:
                self.changed.notify_all()

    def held_back(self) -> None:
        """Before each text: wait while a call waits for its first token, no read waits for
        vectors and the backlog is short (HOLD_BACKLOG_MAX), at most HOLD_MAX_SECONDS."""
        deadline = time.monotonic() + HOLD_MAX_SECONDS
        with self.changed:
            while self.holds > 0 and self.readers == 0 and self.unfinished <= HOLD_BACKLOG_MAX:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self.changed.wait(remaining)


_BACKLOG = _Backlog()
os.register_at_fork(after_in_child=_BACKLOG.reset)
# A process stopped gracefully finishes what is queued (the schedule would, a minute later).
atexit.register(lambda: _BACKLOG.wait(SHUTDOWN_WAIT_SECONDS))


def embeddings_after_commit(items: Sequence[MemoryItem]) -> None:
    """Queue the stored items' embedding once the current transaction commits (at once outside
    one). Never blocks and never raises into the request: past QUEUE_MAX_ITEMS the items are
    left to the schedule. A rolled-back transaction queues nothing."""
    jobs = [EmbeddingJob.of(item) for item in items if item is not None and item.pk]
    if jobs:
        transaction.on_commit(lambda: _BACKLOG.add(jobs))


def pending_embeddings_wait(
    timeout: float = 10.0,
    *,
    user_id: int | None = None,
    except_session_id=None,
    session_ids: set[str] | None = None,
) -> bool:
    """Wait until this process has embedded every item queued so far (of `user_id` only, when
    given; not of the chat session `except_session_id`, which the context pack leaves out of
    its search anyway; of the chat sessions `session_ids` only, when given) (True), or until
    `timeout` seconds have passed (False). A waiting read lifts `embeddings_hold`.

    Tests and benchmarks wait for everything. Reads wait for their user only (read your own
    writes). Returns at once when nothing of the user's is queued, the normal case."""
    only = None if session_ids is None else frozenset(str(session) for session in session_ids)
    return _BACKLOG.wait(timeout, user_id, str(except_session_id or ""), only)


def pending_embedding_sessions(*, user_id: int, except_session_id=None) -> set[str]:
    """The chat sessions (ids as strings) of the user's items this process has still to embed,
    but `except_session_id`'s: the context pack looks up which of them have ended."""
    return _BACKLOG.pending_sessions(user_id, str(except_session_id or ""))


class EmbeddingsHold:
    """Held while a call builds its pack, until its first token: the thread starts no new text
    meanwhile (`_Backlog.held_back`). `release()` is idempotent; also a context manager."""

    def __init__(self) -> None:
        self._held = True
        _BACKLOG.hold(1)

    def release(self) -> None:
        if self._held:
            self._held = False
            _BACKLOG.hold(-1)

    def __del__(self) -> None:
        # A stream the server never started (its client left first) drops its hold unreleased.
        self.release()

    def __enter__(self) -> EmbeddingsHold:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def embeddings_hold() -> EmbeddingsHold:
    """Hold the after-response embedding thread back until the returned hold is released."""
    return EmbeddingsHold()


def memory_items_embedding_fill(
    jobs: Sequence[EmbeddingJob],
    *,
    embedder=None,
    before_each: Callable[[], None] | None = None,
    every_core: bool = False,
) -> int:
    """Embed the jobs' texts (`_embed_on_one_core`; with `every_core`, one call the local
    embedder spreads over its pool, as a bulk job that owns the machine wants) and write the
    vectors in one UPDATE.

    The UPDATE is conditional: only rows that still exist, still have no vector and still
    carry the text and content hash they were queued with get one, so an item edited, deleted
    or embedded meanwhile (the header backfill, a reembed) keeps what it has. Returns the rows
    written. Raises ProviderError when the embedder fails (nothing written).
    """
    if not jobs:
        return 0
    embedder = embedder or get_embedder()
    texts = [job.text for job in jobs]
    if every_core:
        vectors = embedder.embed(texts)
    else:
        vectors = _embed_on_one_core(embedder, texts, before_each=before_each)
    field = MemoryItem._meta.get_field("embedding")
    table = connection.ops.quote_name(MemoryItem._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""UPDATE {table} AS item SET embedding = filled.embedding::vector
                FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[])
                     AS filled(id, embedding, embedding_text, content_hash)
                WHERE item.id = filled.id AND item.embedding IS NULL
                  AND item.embedding_text = filled.embedding_text
                  AND item.content_hash = filled.content_hash""",
            [
                [job.item_id for job in jobs],
                [field.get_db_prep_save(list(vector), connection) for vector in vectors],
                [job.embedding_text for job in jobs],
                [job.content_hash for job in jobs],
            ],
        )
        return cursor.rowcount


def _embed_on_one_core(
    embedder, texts: list[str], *, before_each: Callable[[], None] | None = None
) -> list:
    """The local embedder spreads one call's texts over every core (what a request waiting for
    them wants); after the response one core is enough and the other stays with the requests
    being served, so it gets the texts one call each (each pass runs in the calling thread; the
    CPU is the same, passes are of one text either way), `before_each` called before each
    (the thread's hold). A remote embedder gets one call."""
    if getattr(embedder, "name", "") != "local":
        if before_each is not None:
            before_each()
        return embedder.embed(texts)
    vectors = []
    for text in texts:
        if before_each is not None:
            before_each()
        vectors.append(embedder.embed([text])[0])
    return vectors


def memory_items_embed_missing(
    *,
    limit: int | None = MISSING_PER_RUN,
    grace_seconds: float = MISSING_GRACE_SECONDS,
    user_id: int | None = None,
) -> int:
    """The schedule's sweep: embed chat items (anything written from a chat session: turn-pair
    chunks, message items and passages, summaries) stored without a vector more than
    `grace_seconds` ago, oldest first, at most `limit` per run (None: all), of one user when
    `user_id` is given (benchmarks that must not search before every vector is in). Idempotent
    and safe beside the thread and a concurrent run (the UPDATE is conditional). Returns the
    rows written. Raises ProviderError when the embedder fails (the next run tries again)."""
    cutoff = timezone.now() - timedelta(seconds=grace_seconds)
    missing = MemoryItem.objects.filter(
        embedding__isnull=True, chat_session__isnull=False, created_at__lt=cutoff
    )
    if user_id is not None:
        missing = missing.filter(user_id=user_id)
    missing = missing.order_by("id").only(*EmbeddingJob.FIELDS)
    missing = list(missing if limit is None else missing[:limit])
    size = max(1, int(settings.EMBEDDING_BATCH_SIZE))
    embedder = get_embedder()
    return sum(
        memory_items_embedding_fill(
            [EmbeddingJob.of(item) for item in missing[start : start + size]], embedder=embedder
        )
        for start in range(0, len(missing), size)
    )
