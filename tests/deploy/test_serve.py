"""`manage.py serve --web-workers N` (what `WEB_WORKERS=N make run` runs) serves from N
processes on one port, and Ctrl-C stops all of them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import psutil

from tests.deploy.cluster import BASE_DIR
from tests.deploy.servers import LOOPBACK, free_port, wait_for_port


def test_two_web_workers_answer_on_one_port_and_stop_together():
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env |= {"DJANGO_SETTINGS_MODULE": "memory_site.settings", "EMBEDDING_PROVIDER": "openai"}
    env.pop("REDIS_URL", None)
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--no-worker", "--web-workers", "2"]
        + ["--host", LOOPBACK, "--port", str(port)],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, timeout=120, process=serve)
        response = httpx.get(f"http://{LOOPBACK}:{port}/api/health", timeout=30)
        assert response.status_code in (200, 503)  # answers (503: the dev database unmigrated)
        workers = [
            child
            for child in psutil.Process(serve.pid).children(recursive=True)
            if "spawn_main" in " ".join(child.cmdline())
        ]
        assert len(workers) == 2, [" ".join(child.cmdline()) for child in workers]
        everything = psutil.Process(serve.pid).children(recursive=True)
        serve.send_signal(signal.SIGINT)
        serve.wait(timeout=30)
        gone, alive = psutil.wait_procs(everything, timeout=15)
        assert not alive, alive
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
        try:
            os.killpg(serve.pid, signal.SIGKILL)  # anything left in the group
        except ProcessLookupError:
            pass
