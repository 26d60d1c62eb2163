"""A worker cluster killed mid-import: the other cluster finishes the job, no chunk twice.

Starts a PostgreSQL over TCP (the embedded binaries, password auth) and a redis-server on
loopback, one web node and two worker clusters (Redis broker), uploads a multi-file export,
SIGKILLs the whole cluster that is running the import while files remain, then waits for
the other cluster to take the job over. The takeover waits for the job's lease to run out
(MNEMO_JOB_LEASE_SECONDS, default 30) plus the one-minute schedule that queues abandoned jobs
again, so expect 0.5-2 minutes.

    .venv/bin/python bench/multinode.py [--files 6] [--conversations 150] [--lease-seconds 30]

Last line: JSON with recovery_seconds, attempts, chunks, duplicate_chunks, pairs_expected.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

import httpx  # noqa: E402
import psutil  # noqa: E402
import psycopg  # noqa: E402

from bench.load import FakeModel, manage  # noqa: E402
from tests.deploy.cluster import Cluster, node_environment  # noqa: E402
from tests.deploy.servers import PostgresTcpServer, RedisServer  # noqa: E402
from tests.ingestion_app.export_builders import chatgpt_linear  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--conversations", type=int, default=150, help="per file")
    parser.add_argument("--pairs", type=int, default=4, help="per conversation")
    parser.add_argument("--lease-seconds", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=600)
    return parser.parse_args()


def busiest(cluster: Cluster):
    """The worker cluster whose processes use the most CPU right now (the one importing)."""
    trees = {
        node: [psutil.Process(node.process.pid), *psutil.Process(node.process.pid).children(True)]
        for node in cluster.workers
    }
    for processes in trees.values():
        for process in processes:
            process.cpu_percent(None)
    time.sleep(1.0)
    usage = {
        node: sum(process.cpu_percent(None) for process in processes)
        for node, processes in trees.items()
    }
    return max(usage, key=usage.get), usage


def main() -> None:
    args = parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    postgres = PostgresTcpServer().start()
    redis = RedisServer().start()
    fake = FakeModel(0.0)
    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-multinode-"))
    env = node_environment(
        database_url=postgres.url,
        redis_url=redis.url,
        fake_openai_url=fake.base_url,
        MNEMO_DATA_DIR=str(data_dir),
        MNEMO_JOB_LEASE_SECONDS=str(args.lease_seconds),
    )
    cluster = Cluster(env, data_dir)
    try:
        manage(env, "migrate", "--noinput")
        manage(env, "upsert_schedules")
        token = manage(env, "issue_token", "bench", "--create-user").strip().splitlines()[-1]
        url = cluster.start_web()
        cluster.start_worker(workers=1)
        cluster.start_worker(workers=1)
        cluster.wait_ready(timeout=180)
        files = []
        for index in range(args.files):
            conversations = [
                chatgpt_linear(
                    f"File {index} conversation {n}",
                    [
                        (f"Question {index}.{n}.{p} about bread", f"Answer {index}.{n}.{p}.")
                        for p in range(args.pairs)
                    ],
                    conversation_id=f"f{index}-c{n}",
                )
                for n in range(args.conversations)
            ]
            files.append(("files", (f"export{index}.json", json.dumps(conversations).encode())))
        client = httpx.Client(base_url=url, headers={"Authorization": f"Token {token}"})
        response = client.post("/api/v1/imports", files=files, timeout=120)
        response.raise_for_status()
        job_id = response.json()["import_id"]

        def job() -> dict:
            return client.get(f"/api/v1/imports/{job_id}", timeout=30).json()

        while True:
            state = job()
            done_files = [f for f in state["files"] if f["status"] != "pending"]
            if state["status"] == "running" and done_files:
                break
            if state["status"] in ("done", "failed"):
                raise SystemExit("the import finished before it could be interrupted: add --files")
            time.sleep(0.2)
        victim, usage = busiest(cluster)
        victim.kill_group(signal.SIGKILL)
        killed_at = time.monotonic()
        print(
            f"killed {victim.name} (cpu {usage[victim]:.0f}%) after "
            f"{len(done_files)}/{args.files} files",
            flush=True,
        )
        while job()["status"] not in ("done", "failed"):
            if time.monotonic() - killed_at > args.timeout:
                raise SystemExit(f"not recovered in {args.timeout} s\n{cluster.logs()}")
            time.sleep(1.0)
        recovery = time.monotonic() - killed_at
        state = job()
        with psycopg.connect(postgres.url) as connection:
            attempts = connection.execute(
                "SELECT attempts FROM import_job WHERE id = %s", [job_id]
            ).fetchone()[0]
            chunks, distinct = connection.execute(
                "SELECT count(*), count(DISTINCT chunk_id) FROM rag_store WHERE source = 'chunk'"
                " AND chunk_id IS NOT NULL"
            ).fetchone()
        result = {
            "status": state["status"],
            "recovery_seconds": round(recovery, 1),
            "lease_seconds": args.lease_seconds,
            "attempts": attempts,
            "chunks": chunks,
            "duplicate_chunks": chunks - distinct,
            "pairs_expected": args.files * args.conversations * args.pairs,
            "files": [f["status"] for f in state["files"]],
            "load_average": [round(value, 2) for value in os.getloadavg()],
        }
        print(json.dumps(result))
    finally:
        cluster.stop()
        fake.stop()
        redis.stop()
        postgres.stop()


if __name__ == "__main__":
    main()
