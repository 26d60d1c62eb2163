"""Advisory locks: another connection is kept out while a lock is held and gets in after its
release (real threads, each with its own database connection)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from memory_site.db_locks import advisory_transaction_lock, advisory_try_lock

pytestmark = pytest.mark.django_db(transaction=True)


def other_connection_gets(name: str) -> bool:
    """Whether a second connection can take lock ``name`` right now (without waiting)."""
    result: list[bool] = []

    def worker() -> None:
        try:
            with advisory_try_lock(name) as acquired:
                result.append(acquired)
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=60)
    assert result, "the second connection did not answer"
    return result[0]


def test_transaction_lock_is_held_until_the_transaction_ends():
    with transaction.atomic():
        advisory_transaction_lock("test:user:1")
        assert not other_connection_gets("test:user:1")
        assert other_connection_gets("test:user:2")
    assert other_connection_gets("test:user:1")


def test_transaction_lock_is_released_by_a_rollback():
    with pytest.raises(ZeroDivisionError):
        with transaction.atomic():
            advisory_transaction_lock("test:rollback")
            1 / 0  # noqa: B018
    assert other_connection_gets("test:rollback")


def test_transaction_lock_outside_a_transaction_is_refused():
    with pytest.raises(RuntimeError, match="needs an open transaction"):
        advisory_transaction_lock("test:no-transaction")


def test_try_lock_yields_false_to_a_second_holder_and_is_released_on_exit():
    with advisory_try_lock("test:close:7") as acquired:
        assert acquired
        assert not other_connection_gets("test:close:7")
    assert other_connection_gets("test:close:7")


def test_try_lock_is_released_when_the_block_raises():
    with pytest.raises(ValueError):
        with advisory_try_lock("test:close:8") as acquired:
            assert acquired
            raise ValueError("work failed")
    assert other_connection_gets("test:close:8")
