"""Under `make test-external`: the app really runs on the TCP PostgreSQL (pooled) and on Redis."""

from __future__ import annotations

import os
import threading

import pytest
from django.conf import settings
from django.core.cache import caches
from django.db import connection

from sessions_app.models import Message
from tests.factories import add_message, open_session

pytestmark = pytest.mark.skipif(
    not os.environ.get("MNEMO_TEST_EXTERNAL"),
    reason="needs the servers `make test-external` starts (tests/deploy/external.py)",
)


@pytest.mark.django_db
def test_the_database_is_reached_over_tcp_through_the_pool_with_pgvector():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT host(inet_server_addr()), current_setting('password_encryption'),"
            " (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
        )
        server_address, password_encryption, vector = cursor.fetchone()
    assert server_address == "127.0.0.1"  # NULL over a Unix socket
    assert password_encryption == "scram-sha-256"
    assert vector
    assert connection.pool is not None
    assert connection.pool.max_size == settings.DATABASE_POOL_MAX_SIZE


@pytest.mark.django_db(transaction=True)
def test_more_threads_than_pool_connections_all_get_served(user):
    """Each thread borrows a pooled connection and gives it back at close; none is refused."""
    session = open_session(user)
    add_message(session, "user", "hello")
    threads = settings.DATABASE_POOL_MAX_SIZE + 5
    barrier = threading.Barrier(threads)
    results: list = []

    def work() -> None:
        try:
            barrier.wait(timeout=30)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT count(*) FROM {Message._meta.db_table}, pg_sleep(0.2)")
                results.append(cursor.fetchone()[0])
        except Exception as exc:  # reported below
            results.append(repr(exc))
        finally:
            connection.close()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=60)
    assert results == [1] * threads
    assert connection.pool.get_stats()["pool_max"] == settings.DATABASE_POOL_MAX_SIZE


def test_caches_and_broker_are_redis_shared_between_processes():
    """A value cached by one node is read by another (a fresh client, as another process has)."""
    import redis

    assert settings.Q_CLUSTER.get("redis") == os.environ["REDIS_URL"]
    assert "orm" not in settings.Q_CLUSTER
    caches["default"].set("scale-test-shared", {"count": 3}, 30)
    other_node = caches.create_connection("default")
    assert other_node.get("scale-test-shared") == {"count": 3}
    raw = redis.from_url(os.environ["REDIS_URL"])
    assert any(b"scale-test-shared" in key for key in raw.keys("mnemo:*"))
