"""PostgreSQL advisory locks by name: the one place that turns a lock name into a key.

A lock name says what it guards, e.g. ``f"memory-commit:user:{user_id}"``. It is hashed to a
64-bit key, so names never need a registry of numeric namespaces and two names share a key
only by a (negligible) sha1 collision, which would merely make them wait for each other.
Advisory locks guard nothing by themselves: every writer of the guarded data must take the
same name.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

from django.db import connection

__all__ = ["advisory_lock_key", "advisory_transaction_lock", "advisory_try_lock"]


def advisory_lock_key(name: str) -> int:
    """The signed 64-bit key of lock ``name`` (first 8 bytes of its sha1)."""
    return int.from_bytes(hashlib.sha1(name.encode()).digest()[:8], "big", signed=True)


def advisory_transaction_lock(name: str) -> None:
    """Wait for the lock ``name`` and hold it until the current transaction ends.

    Released by PostgreSQL at COMMIT or ROLLBACK (there is no early release), so call it first
    thing inside ``transaction.atomic()``: everything the transaction writes is then serialized
    against every other holder of the same name. Outside a transaction it would be released at
    once, so that raises RuntimeError.
    """
    if not connection.in_atomic_block:
        raise RuntimeError(f"advisory_transaction_lock({name!r}) needs an open transaction")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [advisory_lock_key(name)])


@contextlib.contextmanager
def advisory_try_lock(name: str) -> Iterator[bool]:
    """Try the connection-level lock ``name`` without waiting; yield whether it was got.

    Not tied to a transaction, so it can be held across slow work done outside one (model
    calls). Released when the ``with`` block exits, or by PostgreSQL if the process dies with
    its connection. A caller that gets False should leave the work to the holder.
    """
    key = advisory_lock_key(name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        acquired = bool(cursor.fetchone()[0])
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
