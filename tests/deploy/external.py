"""`make test-external`: the database-facing tests against an external PostgreSQL and Redis.

Starts a second PostgreSQL (the embedded binaries, as a TCP instance with a password on a
free 127.0.0.1 port) and a redis-server, runs the subset below with DATABASE_URL and REDIS_URL
pointing at them (so the settings take the external-database path with its connection pool,
and the Redis caches), and stops both servers whatever happens. Extra arguments go to pytest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.deploy.servers import PostgresTcpServer, RedisServer

# What touches the database in every way the app does: the session lifecycle and isolation,
# row locks and advisory locks under real concurrency (commit, close), imports, hybrid search
# (pgvector HNSW + full text), erasure; then the deployment tests that need these servers
# (pool, Redis caches, two web nodes and two worker clusters).
EXTERNAL_TESTS = [
    "tests/sessions_app/test_session_lifecycle_api.py",
    "tests/sessions_app/test_auth_and_isolation.py",
    "tests/ingestion_app/test_commit_concurrency.py",
    "tests/imports_app/test_jobs.py",
    "tests/ingestion_app/test_message_index.py",
    "tests/context_app/test_session_close.py",
    "tests/context_app/test_memory_search.py",
    "tests/privacy_app/test_erasure_api.py",
    "tests/deploy/test_external_database.py",
    "tests/deploy/test_multi_node.py",
]


def main(argv: list[str]) -> int:
    # SIGTERM (CI timeout, Ctrl-C of make) must still reach the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    postgres = PostgresTcpServer()
    redis = RedisServer()
    try:
        postgres.start()
        redis.start()
        print(f"external PostgreSQL on 127.0.0.1:{postgres.port}, redis-server on {redis.url}")
        env = {
            **os.environ,
            "DATABASE_URL": postgres.url,
            "REDIS_URL": redis.url,
            "MNEMO_TEST_EXTERNAL": "1",
            # The race tests hold 20 connections from one process at once (threads waiting
            # at a barrier); a pool smaller than that would starve them by design.
            "DATABASE_POOL_MAX_SIZE": "25",
        }
        return subprocess.call([sys.executable, "-m", "pytest", *EXTERNAL_TESTS, *argv], env=env)
    finally:
        redis.stop()
        postgres.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
