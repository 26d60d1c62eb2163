"""The background-task tables (django-q2) as they concern one person: find and forget.

django-q keeps every queued task (OrmQ, a signed pickle), every finished one with its result
(Task, shown as Success and Failure) and schedules (a retry of a session's close). Their
arguments and names carry session ids, job ids, memory ids and user ids, in pickles that no
SQL `LIKE` can see. Erasure decodes each row and deletes those that name the person.

With REDIS_URL the queue is not a table but a Redis list (django-q2's Redis broker): the same
signed pickles, removed one by one with `LREM` (atomic, so a worker popping at the same moment
either got the task first or never sees it).
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django_q.brokers import get_broker
from django_q.brokers.redis_broker import Redis as RedisBroker
from django_q.models import OrmQ, Schedule, Task
from django_q.signing import BadSignature, SignedPackage
from redis.exceptions import RedisError

from memory_site.errors import ServiceUnavailable

logger = logging.getLogger(__name__)


@dataclass
class TaskReferences:
    """What names a person in a task row.

    `strings`: identifiers found anywhere in a row's name, group, arguments or result (session
    and job UUIDs). `integers`: per task function, whether its first positional argument, an
    integer, is the person's (their user id for a rollup rebuild, one of their memory ids for
    a header backfill); integers are only matched for these functions, since another user's
    task may carry the same number meaning something else.
    """

    strings: set[str] = field(default_factory=set)
    integers: dict[str, Callable[[int], bool]] = field(default_factory=dict)

    def mentioned_in(self, *, func, args, kwargs, text_parts) -> bool:
        arguments = list(args or ()) if isinstance(args, (list, tuple)) else [args]
        owns = self.integers.get(str(func or ""))
        if owns and arguments and isinstance(arguments[0], int) and owns(arguments[0]):
            return True
        blob = "\x1f".join(str(part) for part in (*text_parts, arguments, kwargs))
        return any(needle in blob for needle in self.strings if needle)


def _queued(references: TaskReferences) -> Iterator[int]:
    for row in OrmQ.objects.order_by("pk").iterator(chunk_size=500):
        package = row.task if isinstance(row.task, dict) else {}
        if references.mentioned_in(
            func=package.get("func"),
            args=package.get("args"),
            kwargs=package.get("kwargs"),
            text_parts=(package.get("name"), package.get("group"), row.payload),
        ):
            yield row.pk


def _package_mentions(references: TaskReferences, package) -> bool:
    package = package if isinstance(package, dict) else {}
    return references.mentioned_in(
        func=package.get("func"),
        args=package.get("args"),
        kwargs=package.get("kwargs"),
        text_parts=(package.get("name"), package.get("group"), package.get("id")),
    )


def _finished(references: TaskReferences) -> Iterator[str]:
    for row in Task.objects.order_by("pk").iterator(chunk_size=500):
        if references.mentioned_in(
            func=row.func,
            args=row.args,
            kwargs=row.kwargs,
            text_parts=(row.id, row.name, row.group, row.hook, row.result),
        ):
            yield row.pk


def _scheduled(references: TaskReferences) -> Iterator[int]:
    for row in Schedule.objects.order_by("pk").iterator(chunk_size=500):
        if references.mentioned_in(
            func=row.func,
            args=_literal(row.args),
            kwargs=row.kwargs,
            text_parts=(row.name, row.args, row.kwargs, row.hook, row.task),
        ):
            yield row.pk


def _literal(text: str | None):
    """Schedule arguments are stored as Python literals ("'<session id>'", "(7, 'default')")."""
    if not text:
        return ()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return ()
    return value if isinstance(value, tuple) else (value,)


def task_records_matching(*, references: TaskReferences) -> dict[str, list]:
    """Primary keys of the queued, finished and scheduled task rows naming the person."""
    return {
        OrmQ._meta.label: list(_queued(references)),
        Task._meta.label: list(_finished(references)),
        Schedule._meta.label: list(_scheduled(references)),
    }


def task_records_forget(*, references: TaskReferences) -> dict[str, int]:
    """Delete every task row naming the person; rows deleted per model label (non-zero only).

    Run it inside the erasure's transaction: the rows go with the rest or not at all. A task
    already claimed by a worker is not in OrmQ any more; its result row is written when it
    ends and finds its objects gone (erasure removes them first).
    """
    deleted: dict[str, int] = {}
    models = {OrmQ._meta.label: OrmQ, Task._meta.label: Task, Schedule._meta.label: Schedule}
    for label, pks in task_records_matching(references=references).items():
        if pks:
            deleted[label] = models[label].objects.filter(pk__in=pks).delete()[0]
    return deleted


def _redis_broker(broker=None) -> RedisBroker | None:
    broker = broker or get_broker()
    return broker if isinstance(broker, RedisBroker) else None


def task_queue_forget(*, references: TaskReferences, broker=None) -> list[bytes]:
    """Remove from the Redis queue every task naming the person; returns the removed entries
    (for ``task_queue_restore``). Nothing to do with the ORM broker (``task_records_forget``
    covers OrmQ) or when the queue is empty.

    Not transactional: run it inside the erasure's transaction, before the rows go, so no
    worker takes such a task after the rows are deleted; if the erasure then fails, put the
    entries back with ``task_queue_restore``. An entry that cannot be unsigned (another
    deployment's secret) is left alone: it cannot be run either. Raises ServiceUnavailable
    when Redis cannot be reached (the erasure must not end with the person's tasks queued);
    what was removed before that is put back.
    """
    redis_broker = _redis_broker(broker)
    if redis_broker is None:
        return []
    connection, key = redis_broker.connection, redis_broker.list_key
    removed: list[bytes] = []
    try:
        for entry in connection.lrange(key, 0, -1):
            try:
                package = SignedPackage.loads(entry)
            except BadSignature:  # signed with another secret: no worker of ours can run it
                continue
            if _package_mentions(references, package) and connection.lrem(key, 0, entry):
                removed.append(entry)
    except RedisError as exc:
        task_queue_restore(entries=removed, broker=redis_broker)
        raise ServiceUnavailable(
            "The task queue (Redis) is unavailable; nothing was erased. Retry shortly.",
            code="task_queue_unavailable",
        ) from exc
    return removed


def task_queue_restore(*, entries: list[bytes], broker=None) -> None:
    """Queue again the entries ``task_queue_forget`` removed (the erasure did not happen)."""
    redis_broker = _redis_broker(broker)
    if redis_broker is None or not entries:
        return
    try:
        redis_broker.connection.rpush(redis_broker.list_key, *entries)
    except RedisError:
        logger.exception("could not queue again %d task(s) of a failed erasure", len(entries))
