"""Imports through a real `manage.py serve` (web + django-q cluster): the figures of
bench/reports/reliability.md's import sections. Called by bench/faults.py (``--imports-mib``,
``--kill-worker``); kept apart so the fuzz/outage part stays readable.

- Imports of each size (a generated ChatGPT export, bench/import_bench.py's generator) through
  the API, the upload page and ``manage.py import_conversations``, each as its own user: final
  status, time, peak RSS of the process tree that did the work (the worker cluster for API and
  page, the CLI process for the CLI; sum of resident memory of the processes, sampled every
  0.2 s) and whether the three stored the same memories (header and content of every chunk).
- Worker kill mid-import: a 10 MiB import through the API, the django-q worker running it
  (with its parse pool) killed with SIGKILL once it is busy; reported: the time from the kill
  to another worker resuming the job (lease MNEMO_JOB_LEASE_SECONDS, then the one-minute
  resume schedule), to the job being done, and whether its memories equal a clean import's.

Measured (2 shared cores, load 21-23): 10 MiB (3,254 pairs) done via API in 57 s (peak RSS of
the cluster tree 895 MiB), page 48 s (950 MiB), CLI 81 s (366 MiB), the same memories; worker
killed mid-import: resumed after 57 s, done after 117 s, same memories as a clean import, no
pool process left; serve gone 5.6-6.9 s after Ctrl-C. 200 MiB (64,693 pairs, load 13-22): API done in
2,101 s (cluster tree peak 1,128 MiB), CLI 3,211 s (522 MiB), the same memories.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import requests

ROOT = Path(__file__).resolve().parent.parent


class PeakRss:
    """Peak of the summed RSS of a process and its descendants, sampled in a thread."""

    def __init__(self, pid: int, *, children_only: bool = False) -> None:
        self.root = psutil.Process(pid)
        self.children_only = children_only
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                processes = self.root.children(recursive=True)
                if not self.children_only:
                    processes.append(self.root)
                total = 0
                for process in processes:
                    try:
                        total += process.memory_info().rss
                    except psutil.Error:
                        pass
                self.peak = max(self.peak, total)
            except psutil.Error:
                return


def start_serve(env: dict, port: int) -> subprocess.Popen:
    subprocess.run(
        [sys.executable, "manage.py", "upsert_schedules"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            requests.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
            return serve
        except requests.RequestException:
            time.sleep(0.5)
    stop_serve(serve)
    raise SystemExit("serve did not start")


def stop_serve(serve: subprocess.Popen) -> float:
    """Ctrl-C (SIGINT) and the seconds until nothing of it is left."""
    started = time.monotonic()
    everything = psutil.Process(serve.pid).children(recursive=True)
    serve.send_signal(signal.SIGINT)
    serve.wait(timeout=60)
    psutil.wait_procs(everything, timeout=30)
    return time.monotonic() - started


def cluster_pid(serve: subprocess.Popen) -> int:
    for child in psutil.Process(serve.pid).children():
        if "qcluster" in " ".join(child.cmdline()):
            return child.pid
    raise SystemExit("no qcluster under serve")


def _token(username: str) -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user, _ = get_user_model().objects.get_or_create(username=username)
    return Token.objects.get_or_create(user=user)[0].key


def _web_session(username: str, base_url: str) -> requests.Session:
    """A logged-in browser session (a Django session row, its cookie, the CSRF token)."""
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore

    user, _ = get_user_model().objects.get_or_create(username=username)
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    session = requests.Session()
    session.cookies.set(settings.SESSION_COOKIE_NAME, store.session_key)
    session.get(f"{base_url}/memories/imports/", timeout=30)
    return session


def _wait_job(base_url: str, token: str, job_id: str, *, timeout: float = 7200) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = requests.get(
            f"{base_url}/api/v1/imports/{job_id}",
            headers={"Authorization": f"Token {token}"},
            timeout=30,
        ).json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(1)
    raise SystemExit(f"import {job_id} did not finish")


def _memories(username: str) -> list[tuple[str, str]]:
    from ingestion_app.models import MemoryItem

    return sorted(
        MemoryItem.objects.filter(user__username=username, source="chunk").values_list(
            "header", "content"
        )
    )


def import_via_api(base_url, serve, path: Path, username: str) -> dict:
    token = _token(username)
    started = time.monotonic()
    with PeakRss(cluster_pid(serve)) as rss, open(path, "rb") as handle:
        response = requests.post(
            f"{base_url}/api/v1/imports",
            headers={"Authorization": f"Token {token}"},
            files={"files": (path.name, handle)},
            timeout=3600,
        )
        response.raise_for_status()
        job = _wait_job(base_url, token, response.json()["import_id"])
    return {"status": job["status"], "seconds": time.monotonic() - started, "rss": rss.peak}


def import_via_page(base_url, serve, path: Path, username: str) -> dict:
    session = _web_session(username, base_url)
    token = _token(username)
    started = time.monotonic()
    with PeakRss(cluster_pid(serve)) as rss, open(path, "rb") as handle:
        response = session.post(
            f"{base_url}/memories/imports/",
            data={"csrfmiddlewaretoken": session.cookies.get("csrftoken", "")},
            headers={"X-CSRFToken": session.cookies.get("csrftoken", "")},
            files={"files": (path.name, handle)},
            allow_redirects=False,
            timeout=3600,
        )
        match = re.search(
            r"/memories/imports/([0-9a-f-]{36})/", response.headers.get("Location", "")
        )
        if not match:
            raise SystemExit(f"upload page answered {response.status_code}")
        job = _wait_job(base_url, token, match.group(1))
    return {"status": job["status"], "seconds": time.monotonic() - started, "rss": rss.peak}


def import_via_cli(env: dict, path: Path, username: str) -> dict:
    _token(username)  # the user must exist
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "import_conversations", str(path), "--user", username],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    with PeakRss(process.pid) as rss:
        output, _ = process.communicate()
    status = re.search(r"Import \S+: (\w+)", output or "")
    return {
        "status": status.group(1) if status else f"exit {process.returncode}",
        "seconds": time.monotonic() - started,
        "rss": rss.peak,
    }


def run_imports(
    env: dict, port: int, sizes_mib: list[int], work_dir: Path, entries=("api", "page", "cli")
) -> None:
    from bench.import_bench import generate_export

    serve = start_serve(env, port)
    base_url = f"http://127.0.0.1:{port}"
    try:
        for size in sizes_mib:
            path = work_dir / f"conversations-{size}mib.json"
            if not path.exists():
                conversations, pairs = generate_export(path, size * 1024 * 1024)
                print(f"generated {path.name}: {conversations} conversations, {pairs} pairs")
            results = {}
            stamp = int(time.time())
            runners = {
                "api": lambda u, p=path: import_via_api(base_url, serve, p, u),
                "page": lambda u, p=path: import_via_page(base_url, serve, p, u),
                "cli": lambda u, p=path: import_via_cli(env, p, u),
            }
            for entry, runner in runners.items():
                if entry not in entries:
                    continue
                username = f"imp-{entry}-{size}-{stamp}"
                outcome = runner(username)
                results[entry] = (username, outcome)
                print(
                    f"import {size} MiB via {entry}: {outcome['status']} in "
                    f"{outcome['seconds']:.0f} s, peak RSS {outcome['rss'] / 2**20:.0f} MiB, "
                    f"{len(_memories(username))} chunks, load {os.getloadavg()}"
                )
            stored = [_memories(username) for username, _ in results.values()]
            same = all(memories == stored[0] for memories in stored)
            print(f"import {size} MiB: the same memories through {', '.join(results)}: {same}")
    finally:
        print(f"serve stopped {stop_serve(serve):.1f} s after Ctrl-C")


def run_worker_kill(env: dict, port: int, work_dir: Path) -> None:
    from bench.import_bench import generate_export

    path = work_dir / "conversations-10mib.json"
    if not path.exists():
        generate_export(path, 10 * 1024 * 1024)
    serve = start_serve(env, port)
    base_url = f"http://127.0.0.1:{port}"
    username = f"kill-{int(time.time())}"
    token = _token(username)
    try:
        with open(path, "rb") as handle:
            job_id = requests.post(
                f"{base_url}/api/v1/imports",
                headers={"Authorization": f"Token {token}"},
                files={"files": (path.name, handle)},
                timeout=600,
            ).json()["import_id"]
        from imports_app.models import ImportJob

        victim = None
        deadline = time.monotonic() + 600
        while victim is None and time.monotonic() < deadline:
            job = ImportJob.objects.get(id=job_id)
            if job.status == "running":
                for process in psutil.Process(cluster_pid(serve)).children(recursive=True):
                    if any("spawn_main" in " ".join(c.cmdline()) for c in process.children()):
                        victim = process
            time.sleep(0.5)
        if victim is None:
            raise SystemExit("no busy worker with a parse pool found")
        pool = victim.children()
        time.sleep(3)
        victim.kill()
        killed_at = time.monotonic()
        print(f"worker kill: killed worker {victim.pid} mid-import, load {os.getloadavg()}")
        psutil.wait_procs(pool, timeout=10)
        left = [p.pid for p in pool if p.is_running()]
        print(f"worker kill: its parse pool left behind: {left or 'none'}")
        resumed = None
        while time.monotonic() - killed_at < 1800:
            job = ImportJob.objects.get(id=job_id)
            if resumed is None and job.attempts >= 2:
                resumed = time.monotonic() - killed_at
                print(f"worker kill: resumed by another worker after {resumed:.0f} s")
            if job.status not in ("queued", "running"):
                break
            time.sleep(1)
        print(
            f"worker kill: job {job.status} {time.monotonic() - killed_at:.0f} s after the kill "
            f"(attempts {job.attempts}), load {os.getloadavg()}"
        )
        clean = f"{username}-clean"
        import_via_cli(env, path, clean)
        stored = _memories(username)
        print(
            f"worker kill: {len(stored)} chunks, {len(set(stored))} distinct; same memories as "
            f"a clean import: {stored == _memories(clean)}"
        )
    finally:
        print(f"serve stopped {stop_serve(serve):.1f} s after Ctrl-C")
