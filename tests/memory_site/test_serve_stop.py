"""Ctrl-C on `manage.py serve` (what `make run` runs) while a task worker is busy importing a
large export with its parse pool: the web server, the cluster, its workers and the pool are all
gone within 10 s, and the interrupted job can be taken over once its lease runs out."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest
from django.db import connection
from django_q.conf import Conf

from imports_app.models import ImportJob
from imports_app.services.jobs import (
    import_job_claim,
    import_job_create_from_paths,
    import_job_enqueue,
)
from tests.factories import lease_run_out
from tests.imports_app.test_worker_process import _big_export

pytestmark = pytest.mark.django_db(transaction=True)

BASE_DIR = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve_env(settings) -> dict:
    """The subprocesses use this test's database and the loopback embedder."""
    db = connection.settings_dict
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    return env | {
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "DATABASE_URL": f"postgresql://{db['USER']}@{quote(db['HOST'], safe='')}/{db['NAME']}",
        "EMBEDDING_PROVIDER": "openai",
        "EMBEDDING_MODEL": "text-embedding-3-small",
        "EMBEDDING_DIMENSIONS": str(settings.EMBEDDING_DIMENSIONS),
        "OPENAI_BASE_URL": settings.OPENAI_BASE_URL,
        "OPENAI_API_KEY": "test-key",
        "LLM_PROVIDER": "local",
        "MNEMO_JOB_LEASE_SECONDS": str(settings.MNEMO_JOB_LEASE_SECONDS),
        "MNEMO_WORKERS": "1",
    }


def _pool_processes(root: psutil.Process) -> list[psutil.Process]:
    found = []
    for child in root.children(recursive=True):
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            pass
    return found


def test_ctrl_c_stops_everything_mid_import_and_the_job_can_resume(
    user, tmp_path, fake_embedder, settings, monkeypatch
):
    # Long enough to outlast the stop on a slow machine; the test ages the lease itself below.
    settings.MNEMO_JOB_LEASE_SECONDS = 120
    export = tmp_path / "conversations.json"
    export.write_bytes(_big_export(30 * 1024 * 1024))  # still importing when stopped
    job = import_job_create_from_paths(user=user, paths=[export])
    monkeypatch.setattr(Conf, "SYNC", False)  # queue it for the cluster, not inline
    import_job_enqueue(job_id=job.id)

    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(_free_port())],
        cwd=BASE_DIR,
        env=_serve_env(settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    root = psutil.Process(serve.pid)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and serve.poll() is None:
            status = ImportJob.objects.filter(id=job.id).values_list("status", flat=True)[0]
            if status == "running" and _pool_processes(root):
                break
            time.sleep(0.5)
        assert serve.poll() is None, "serve exited before the worker got busy"
        assert _pool_processes(root), "the worker never started its parse pool"
        everything = root.children(recursive=True)

        started = time.monotonic()
        os.killpg(serve.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
        serve.wait(timeout=30)
        gone, alive = psutil.wait_procs(
            everything, timeout=max(10 - (time.monotonic() - started), 0)
        )
        stopped_after = time.monotonic() - started

        assert not alive, [" ".join(p.cmdline()) for p in alive]
        assert stopped_after < 10
    finally:
        try:
            os.killpg(serve.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for child in root.children(recursive=True) if serve.poll() is None else []:
            child.kill()

    job.refresh_from_db()
    assert job.status == "running" and job.attempts == 1  # cut off, not finished
    assert not import_job_claim(job_id=job.id)  # its lease still holds for a while
    lease_run_out(ImportJob, job.id)  # no worker renews it: as before the next start
    assert import_job_claim(job_id=job.id)  # the next start's worker takes it over


ESCAPING_CHILD = """
import signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # busy in a long call: deaf to Ctrl-C
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
print("ready", flush=True)
time.sleep(300)
"""


def test_stop_kills_a_busy_child_and_a_grandchild_that_left_its_group():
    from memory_site.management.commands.serve import processes_stop

    child = subprocess.Popen(
        [sys.executable, "-c", ESCAPING_CHILD],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdout.readline().strip() == "ready"
    grandchild = psutil.Process(child.pid).children()[0]
    assert os.getpgid(grandchild.pid) != os.getpgid(child.pid)  # out of reach of killpg

    started = time.monotonic()
    processes_stop([child])

    assert time.monotonic() - started < 10
    assert child.poll() is not None
    assert not grandchild.is_running() or grandchild.status() == psutil.STATUS_ZOMBIE
