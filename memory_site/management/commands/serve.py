"""Serve the ASGI app (uvicorn) and the django-q2 worker together until Ctrl-C stops both."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the web server (ASGI, streaming-capable) and the task worker in one foreground process."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, host, port, **options):
        python = sys.executable
        worker = subprocess.Popen([python, "manage.py", "qcluster"])
        web = subprocess.Popen(
            [python, "-m", "uvicorn", "memory_site.asgi:application", "--host", host, "--port", str(port),
             "--timeout-graceful-shutdown", "5"]
        )
        self.stdout.write(f"Mnemo: web http://{host}:{port}/ (pid {web.pid}), worker pid {worker.pid}. Ctrl-C stops both.")
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping and web.poll() is None and worker.poll() is None:
            time.sleep(0.5)
        for process in (web, worker):
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in (web, worker):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        self.stdout.write("Mnemo stopped.")
