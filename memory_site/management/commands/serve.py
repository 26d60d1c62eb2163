"""Serve the ASGI app (uvicorn) and the django-q2 worker cluster together until Ctrl-C stops both.

One machine runs both (the default). A multi-node layout runs web-only nodes
(`serve --no-worker`) behind a load balancer and worker-only nodes (`serve --no-web`), all on
one DATABASE_URL and one REDIS_URL (docs/explanation/scaling.md).

Each child runs in its own process group, so the terminal's Ctrl-C reaches only this command,
which then stops them in order: SIGINT to every group first, and SIGKILL to the whole group of
whatever is still alive after STOP_GRACE_SECONDS. A django-q cluster waits for a busy worker to
finish its task, and an import's parse pool lives in the worker's group, so without the group
kill a busy worker would outlive the command. A job cut off this way keeps its lease until it
runs out and is resumed by the next start's resume schedule.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory_site.database import database_preflight
from memory_site.providers.local_onnx import onnx_model_prepare
from memory_site.setting_table import setting

# Ctrl-C to nothing left running within 10 s on a slow, busy machine: a graceful stop for
# this long (uvicorn closes its connections, an idle cluster stops its workers), then SIGKILL
# and at most STOP_REAP_SECONDS to see every process gone. A busy cluster never stops within
# any grace (it waits for the running task), so a longer grace only delays the kill.
STOP_GRACE_SECONDS = 3.0
STOP_REAP_SECONDS = 1.5
# uvicorn's own limit on open connections, inside the grace.
WEB_GRACEFUL_SECONDS = 2


class Command(BaseCommand):
    help = "Run the web server (ASGI, streaming-capable) and the task worker in one foreground process."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
        parser.add_argument("--port", type=int, default=8000, help="port to listen on")
        parser.add_argument(
            "--web-workers",
            type=int,
            default=setting("WEB_WORKERS"),
            help="uvicorn worker processes sharing the port (default: WEB_WORKERS or 1)",
        )
        parser.add_argument(
            "--q-workers",
            type=int,
            default=None,
            help="django-q2 worker processes in the cluster (default: Q_WORKERS or 2)",
        )
        parser.add_argument("--no-worker", action="store_true", help="web server only")
        parser.add_argument("--no-web", action="store_true", help="task worker cluster only")

    def handle(self, *args, host, port, web_workers, q_workers, no_worker, no_web, **options):
        if no_worker and no_web:
            raise CommandError("--no-worker and --no-web together leave nothing to run.")
        if web_workers < 1 or (q_workers is not None and q_workers < 1):
            raise CommandError("--web-workers and --q-workers must be at least 1.")
        problems = database_preflight()
        if problems:
            raise CommandError("Mnemo cannot start: " + "; ".join(problems))
        python = sys.executable
        # Export the onnx embedder here, once, before the web server and the worker both load it.
        if settings.EMBEDDING_PROVIDER == "local" and settings.EMBEDDING_BACKEND == "onnx":
            onnx_model_prepare(
                settings.MNEMO_MODELS_DIR, min_cosine=settings.EMBEDDING_ONNX_PARITY_MIN_COSINE
            )
        env = {**os.environ, "MNEMO_WARM_EMBEDDER": "1"}
        # Prometheus multi-process mode: every web worker and task worker of this command
        # writes its samples here, a scrape of any web worker sums them (memory_site.metrics).
        # One folder per run (a previous run's samples would be counted again, and a second
        # `serve` on the same data folder keeps its own); those of runs that ended are removed.
        env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(_metrics_dir(Path(settings.DATA_DIR))))
        if q_workers is not None:
            env["Q_WORKERS"] = str(q_workers)
        processes: dict[str, subprocess.Popen] = {}
        if not no_worker:
            processes["task worker"] = subprocess.Popen(
                [python, "-m", "memory_site.cli", "qcluster"], env=env, start_new_session=True
            )
        if not no_web:
            processes["web server"] = subprocess.Popen(
                [
                    python,
                    "-m",
                    "uvicorn",
                    "memory_site.asgi:application",
                    "--host",
                    host,
                    "--port",
                    str(port),
                    "--workers",
                    str(web_workers),
                    "--timeout-graceful-shutdown",
                    str(WEB_GRACEFUL_SECONDS),
                    # C event loop and HTTP parser: ~5 ms less CPU per call than asyncio + h11.
                    "--loop",
                    "uvloop",
                    "--http",
                    "httptools",
                ],
                env=env,
                start_new_session=True,
            )
        parts = []
        if "web server" in processes:
            parts.append(
                f"web http://{host}:{port}/ ({web_workers} process(es), "
                f"pid {processes['web server'].pid})"
            )
        if "task worker" in processes:
            workers = q_workers or settings.Q_CLUSTER["workers"]
            parts.append(
                f"task worker cluster ({workers} worker(s), pid {processes['task worker'].pid})"
            )
        self.stdout.write("Mnemo: " + ", ".join(parts) + ". Ctrl-C stops everything.")
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True
            raise _StopRequested  # out of the sleep below at once, not at its end

        try:
            signal.signal(signal.SIGINT, stop)
            signal.signal(signal.SIGTERM, stop)
            while all(process.poll() is None for process in processes.values()):
                time.sleep(0.5)
        except _StopRequested:
            pass
        # A second Ctrl-C while stopping must not cut the stop short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        first_dead = None
        if not stopping:
            first_dead = next(
                name for name, process in processes.items() if process.poll() is not None
            )
        processes_stop(list(processes.values()))
        if first_dead:
            raise CommandError(
                f"The {first_dead} exited on its own (is port {port} free?); stopped everything."
            )
        self.stdout.write("Mnemo stopped.")


class _StopRequested(Exception):
    """Raised by the Ctrl-C handler to leave the command's wait loop."""


def processes_stop(processes: list[subprocess.Popen]) -> None:
    """Stop each child and everything below it within STOP_GRACE_SECONDS + STOP_REAP_SECONDS.

    Each group first gets SIGINT, as a terminal's Ctrl-C would send (uvicorn shuts down
    gracefully, the django-q cluster stops taking tasks); after the grace time every group
    still holding a process gets SIGKILL, including the cluster's workers and an import's parse
    pool, which a cluster waiting for a busy task would otherwise leave running. Descendants
    seen before the stop or at the kill are killed one by one too, so one that left its
    group (a process that started its own session) cannot outlive the command either. A
    killed grandchild whose parent died too is left a zombie until init reaps it: it is gone
    (it holds no memory, port or file), so the wait does not count it.
    """
    descendants = _descendants(processes)
    for process in processes:
        if process.poll() is None:
            _signal_group(process, signal.SIGINT)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            pass
    descendants |= _descendants(processes)
    for process in processes:
        _signal_group(process, signal.SIGKILL)  # also children left after the leader exited
    for descendant in descendants:
        try:
            descendant.kill()
        except psutil.Error:
            pass
    deadline = time.monotonic() + STOP_REAP_SECONDS
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            pass
    while time.monotonic() < deadline and any(_running(d) for d in descendants):
        time.sleep(0.05)


def _running(process: psutil.Process) -> bool:
    """Alive and not a zombie (a killed process waiting to be reaped runs nothing)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _metrics_dir(data_dir: Path) -> Path:
    """A fresh folder for this run's metric samples, the folders of ended runs removed."""
    root = data_dir / "metrics"
    root.mkdir(parents=True, exist_ok=True)
    for folder in root.iterdir():
        if not (folder.name.isdigit() and psutil.pid_exists(int(folder.name))):
            shutil.rmtree(folder, ignore_errors=True)
    mine = root / str(os.getpid())
    shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir()
    return mine


def _descendants(processes: list[subprocess.Popen]) -> set[psutil.Process]:
    found: set[psutil.Process] = set()
    for process in processes:
        try:
            found.update(psutil.Process(process.pid).children(recursive=True))
        except psutil.Error:
            pass
    return found


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)  # the child leads its own group (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass
