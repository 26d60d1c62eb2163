"""The embedded PostgreSQL is reached through the same connection pool as an external one in web
processes (a new server connection per request cost the server as much CPU as the request,
bench/load.py), and through none in the forked task workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from tests.deploy.cluster import BASE_DIR

# Ten requests one after the other, each closing its connection at the end as Django does.
PROBE = """
import json, sys
sys.argv = [sys.argv[0], *json.loads(sys.argv[1])]
import django
django.setup()
from django.db import connection
pids, thresholds = set(), set()
for _ in range(10):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pids.add(cursor.fetchone()[0])
    thresholds.add(connection.connection.prepare_threshold)
    connection.close()
print(json.dumps({
    "pool": "pool" in connection.settings_dict["OPTIONS"],
    "backends": len(pids),
    "prepare_threshold": sorted(thresholds, key=str),
}))
"""


def probe(argv: list[str], **extra_env: str) -> dict:
    """The real settings (not the test settings) on the test run's embedded server."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "DATABASE_", "PYTEST_"))
    }
    env |= {
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "MNEMO_DATA_DIR": str(settings.DATA_DIR),
        **extra_env,
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(bool(settings.DATABASE_URL), reason="the embedded server only")
def test_a_web_process_reuses_its_pooled_embedded_connections():
    web = probe(["uvicorn"])
    assert web["pool"] is True
    assert web["backends"] < 10  # the server connections are handed from request to request


@pytest.mark.skipif(bool(settings.DATABASE_URL), reason="the embedded server only")
def test_task_workers_and_pool_size_zero_open_a_connection_per_use():
    for worker in (probe(["qcluster"]), probe(["uvicorn"], DATABASE_POOL_MAX_SIZE="0")):
        assert (worker["pool"], worker["backends"]) == (False, 10)


@pytest.mark.skipif(bool(settings.DATABASE_URL), reason="the embedded server only")
def test_search_statements_are_prepared_unless_the_threshold_is_zero():
    """DATABASE_PREPARE_THRESHOLD reaches every connection, pooled or a worker's own; 0 (a
    pooler that cannot keep prepared statements) turns preparing off."""
    assert probe(["uvicorn"])["prepare_threshold"] == [2]
    assert probe(["qcluster"], DATABASE_PREPARE_THRESHOLD="5")["prepare_threshold"] == [5]
    assert probe(["uvicorn"], DATABASE_PREPARE_THRESHOLD="0")["prepare_threshold"] == [None]
