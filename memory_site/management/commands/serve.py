"""Serve the ASGI app (uvicorn) and the django-q2 worker together until Ctrl-C stops both."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Run the web server (ASGI, streaming-capable) and the task worker in one foreground process."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, host, port, **options):
        python = sys.executable
        env = {**os.environ, "MNEMO_WARM_EMBEDDER": "1"}
        worker = subprocess.Popen([python, "manage.py", "qcluster"], env=env)
        web = subprocess.Popen(
            [
                python,
                "-m",
                "uvicorn",
                "memory_site.asgi:application",
                "--host",
                host,
                "--port",
                str(port),
                "--timeout-graceful-shutdown",
                "5",
            ],
            env=env,
        )
        self.stdout.write(
            f"Mnemo: web http://{host}:{port}/ (pid {web.pid}), worker pid {worker.pid}. Ctrl-C stops both."
        )
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping and web.poll() is None and worker.poll() is None:
            time.sleep(0.5)
        first_dead = (
            None if stopping else ("web server" if web.poll() is not None else "task worker")
        )
        for process in (web, worker):
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in (web, worker):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        if first_dead:
            raise CommandError(
                f"The {first_dead} exited on its own (is port {port} free?); stopped both."
            )
        self.stdout.write("Mnemo stopped.")
