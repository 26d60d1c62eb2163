"""The OpenAI-compatible endpoint's overhead: Mnemo in front of an upstream vs the upstream alone.

A fake OpenAI-compatible upstream (tests/fake_openai.py) streams a 40-word reply on loopback.
Mnemo runs as it does in production (uvicorn serving memory_site.asgi, in a subprocess) with
the local all-MiniLM-L6-v2 embedder and the offline summarizer, against a throwaway database
holding a user with closed, summarized sessions (so every call builds a real context pack:
rollups plus a semantic search over the user's memory items).

Run: ``.venv/bin/python bench/proxy.py [--calls 200] [--history-sessions 20]``.

Past figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["LLM_PROVIDER"] = "local"
os.environ["EMBEDDING_PROVIDER"] = "local"

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
import psutil  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from context_app.services.summaries import session_close_run  # noqa: E402
from ingestion_app.services.deferred_embeddings import pending_embeddings_wait  # noqa: E402
from memory_site.providers import get_embedder  # noqa: E402
from sessions_app.models import ChatSession  # noqa: E402
from sessions_app.services.messages import message_create, message_run_hooks  # noqa: E402
from sessions_app.services.sessions import session_open  # noqa: E402
from tests.fake_openai import FakeOpenAIServer  # noqa: E402

TOPICS = [
    ("my sister Anna", "lives in Lisbon and teaches piano"),
    ("the garden", "needs tomatoes planted in May"),
    ("my marathon plan", "peaks at 32 km three weeks before the race"),
    ("our Postgres indexes", "use HNSW with cosine distance"),
    ("the Kyoto trip", "is booked for the second week of April"),
    ("my sourdough starter", "is fed twice a day with rye flour"),
]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def line(label: str, values: list[float]) -> str:
    return (
        f"{label:<34} p50 {percentile(values, 0.5):7.1f}  p95 {percentile(values, 0.95):7.1f}"
        f"  mean {statistics.fmean(values):7.1f} ms"
    )


def seed_history(user, sessions: int, rng: random.Random) -> None:
    """Closed, summarized sessions with indexed messages: what the packs draw on."""
    for index in range(sessions):
        session = session_open(user=user, title=f"chat {index}")
        for _ in range(3):
            subject, fact = rng.choice(TOPICS)
            for role, text in (
                ("user", f"About {subject}: it {fact}. What do you think?"),
                ("assistant", f"Good to know that {subject} {fact}; I will keep it in mind."),
            ):
                message_run_hooks(message=message_create(session=session, role=role, content=text))
        # The vectors embedded after each message, before the packs are measured.
        assert pending_embeddings_wait(60)
        ChatSession.objects.filter(id=session.id).update(status=ChatSession.Status.CLOSING)
        assert session_close_run(session_id=session.id) == "closed"


def serve_mnemo(upstream_url: str, database: str) -> tuple[subprocess.Popen, str]:
    settings = connection.settings_dict
    host = quote(settings["HOST"], safe="") if settings["HOST"] else "localhost"
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{settings['USER']}@{host}/{database}",
        "OPENAI_BASE_URL": upstream_url,
        "OPENAI_API_KEY": "bench-key",
        "LLM_PROVIDER": "local",
        "EMBEDDING_PROVIDER": "local",
        "MNEMO_WARM_EMBEDDER": "1",
    }
    port = 18000 + os.getpid() % 1000
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "memory_site.asgi:application", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code < 500:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("uvicorn did not start")


class CpuMeter:
    """CPU seconds used by Mnemo's server process and the PostgreSQL server's processes.

    Wall-clock latency on a shared machine measures the queue for the CPU as much as the
    work; the CPU time Mnemo and its database spend on a call until its first token does not
    depend on the load, and approximates the overhead on an idle machine (the path is
    sequential; waiting on the loopback sockets is not counted).
    """

    def __init__(self, server_pid: int):
        self.server = psutil.Process(server_pid)
        data_dir = str(Path(connection.settings_dict["HOST"] or "").resolve())
        self.postgres = next(
            (
                process
                for process in psutil.process_iter(["name", "cmdline"])
                if (process.info["name"] or "").startswith("postgres")
                and data_dir in " ".join(process.info["cmdline"] or [])
            ),
            None,
        )

    @staticmethod
    def _cpu(process) -> dict[str, float]:
        """Seconds on the CPU per thread: the scheduler's nanosecond count
        (/proc/PID/task/TID/sched) where Linux shows it, else psutil's 10 ms ticks."""
        threads: dict[str, float] = {}
        try:
            for task in Path(f"/proc/{process.pid}/task").iterdir():
                for line in (task / "sched").read_text().splitlines():
                    if line.startswith("se.sum_exec_runtime"):
                        threads[f"{process.pid}/{task.name}"] = float(line.split(":")[1]) / 1000
            if threads:
                return threads
        except OSError:
            pass
        try:
            times = process.cpu_times()
        except psutil.Error:
            return {}
        return {str(process.pid): times.user + times.system}

    def snapshot(self) -> dict[str, float]:
        processes = [self.server, *self.server.children(recursive=True)]
        if self.postgres is not None:
            processes += [self.postgres, *self.postgres.children()]
        snapshot: dict[str, float] = {}
        for process in processes:
            snapshot.update(self._cpu(process))
        return snapshot

    @staticmethod
    def spent_ms(
        before: dict[str, float], after: dict[str, float], pids: set[int] | None = None
    ) -> float:
        """CPU ms between two snapshots (only the processes in `pids` when given)."""
        return 1000 * sum(
            value - before.get(key, 0.0)
            for key, value in after.items()
            if pids is None or int(key.split("/")[0]) in pids
        )

    def postgres_pids(self) -> set[int]:
        if self.postgres is None:
            return set()
        return {self.postgres.pid, *(child.pid for child in self.postgres.children())}


def timed_stream(
    client: httpx.Client, url: str, body: dict, headers: dict, meter: CpuMeter | None = None
) -> tuple[float, float, str, tuple[float, float]]:
    """(time to first content delta, whole call) in ms, the reply text, and with `meter` the
    server-side CPU ms spent until the first content delta (Mnemo and PostgreSQL, and
    PostgreSQL's part)."""
    cpu_before = meter.snapshot() if meter else {}
    cpu_ms = (0.0, 0.0)
    started = time.perf_counter()
    first = None
    parts: list[str] = []
    with client.stream("POST", url, json=body, headers=headers) as response:
        assert response.status_code == 200, response.read()
        for raw in response.iter_lines():
            if not raw.startswith("data:") or raw.endswith("[DONE]"):
                continue
            chunk = json.loads(raw[5:])
            for choice in chunk.get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    if first is None:
                        first = time.perf_counter()
                        if meter:
                            cpu_after = meter.snapshot()
                            cpu_ms = (
                                CpuMeter.spent_ms(cpu_before, cpu_after),
                                CpuMeter.spent_ms(cpu_before, cpu_after, meter.postgres_pids()),
                            )
                    parts.append(text)
    ended = time.perf_counter()
    return (first - started) * 1000, (ended - started) * 1000, "".join(parts), cpu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--history-sessions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--pause-ms",
        type=float,
        default=0.0,
        help="pause after each call, as a person reading the reply gives one (0: back to back)",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)

    upstream = FakeOpenAIServer(dimensions=384).start()
    upstream.reply_text = " ".join(f"word{i}" for i in range(40))
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    process = None
    try:
        get_embedder().embed(["warm up the model"])
        user = get_user_model().objects.create_user(username="bench-proxy")
        key = Token.objects.create(user=user).key
        seed_history(user, args.history_sessions, rng)
        process, mnemo_url = serve_mnemo(upstream.base_url, database)
        headers = {"Authorization": f"Bearer {key}"}
        meter = CpuMeter(process.pid)
        direct, proxied, direct_total, proxied_total, cpu = [], [], [], [], []
        first_turn: list[bool] = []
        cpu_postgres: list[float] = []
        with httpx.Client(timeout=60) as client:
            history: list[dict] = []
            for call in range(args.calls + 10):
                if call % 10 == 0:
                    history = [{"role": "system", "content": f"You are assistant #{call}."}]
                subject, _ = rng.choice(TOPICS)
                history.append({"role": "user", "content": f"Remind me about {subject} ({call})."})
                body = {"model": "fake-model", "messages": history, "stream": True}
                ttft_direct, total_direct, _, _ = timed_stream(
                    client, f"{upstream.base_url}/chat/completions", body, {}
                )
                ttft_proxied, total_proxied, reply, cpu_ms = timed_stream(
                    client, f"{mnemo_url}/v1/chat/completions", body, headers, meter
                )
                history.append({"role": "assistant", "content": reply})
                if args.pause_ms:
                    time.sleep(args.pause_ms / 1000)
                if call < 10:  # warm-up: first pack builds, connection pools
                    continue
                direct.append(ttft_direct)
                proxied.append(ttft_proxied)
                direct_total.append(total_direct)
                proxied_total.append(total_proxied)
                cpu.append(cpu_ms[0])
                cpu_postgres.append(cpu_ms[1])
                first_turn.append(call % 10 == 0)
        overhead = [p - d for p, d in zip(proxied, direct, strict=True)]
        overhead_total = [p - d for p, d in zip(proxied_total, direct_total, strict=True)]
        packs = sum(
            1
            for body in upstream.bodies("/chat/completions")
            if body["messages"][0]["content"].startswith("Background from Mnemo")
        )
        print(
            f"{args.calls} streamed calls (10-turn conversations, {args.history_sessions} closed "
            f"sessions of history; {packs} upstream requests carried a pack; pause after each "
            f"call {args.pause_ms:g} ms); CPUs "
            f"{os.cpu_count()}, load average {os.getloadavg()}"
        )
        print(line("TTFT upstream directly", direct))
        print(line("TTFT through Mnemo", proxied))
        print(line("TTFT overhead (paired)", overhead))
        print(
            line(
                "  first turns of a conversation",
                [o for o, f in zip(overhead, first_turn, strict=True) if f],
            )
        )
        print(
            line("  later turns", [o for o, f in zip(overhead, first_turn, strict=True) if not f])
        )
        print(line("server CPU until first token", cpu))
        print(line("  of which PostgreSQL", cpu_postgres))
        print(line("whole call upstream directly", direct_total))
        print(line("whole call through Mnemo", proxied_total))
        print(line("whole-call overhead (paired)", overhead_total))
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=20)
        upstream.stop()
        connection.close()
        connection.creation.destroy_test_db(database, verbosity=0)


if __name__ == "__main__":
    main()
