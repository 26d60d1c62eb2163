"""Several Mnemo processes on one database and one Redis: web nodes (uvicorn) and worker
clusters (django-q2 qcluster), each a real process on loopback, started and stopped here.

Used by tests/deploy/test_multi_node.py and by bench/load.py and bench/multinode.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.deploy.servers import LOOPBACK, free_port, wait_for_port

BASE_DIR = Path(__file__).resolve().parents[2]


def node_environment(
    *, database_url: str, redis_url: str, fake_openai_url: str | None = None, **extra: str
) -> dict[str, str]:
    """The environment of a node: the shared database and Redis, no generated local secrets
    that differ per process, embeddings from the loopback fake server when given (fast; the
    same vectors in every process), the offline summarizer and fact extractor."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "PYTEST_", "MNEMO_TASKS_SYNC"))
    }
    env |= {
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "MNEMO_TASKS_SYNC": "0",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "LOG_LEVEL": "WARNING",
    }
    if fake_openai_url:
        env |= {
            "OPENAI_BASE_URL": fake_openai_url,
            "OPENAI_API_KEY": "test-key",
            "LLM_PROVIDER": "local",
            "EMBEDDING_PROVIDER": "openai",
            "EMBEDDING_MODEL": "text-embedding-3-small",
            "EMBEDDING_DIMENSIONS": "384",
        }
    return env | extra


class Node:
    """One process of the cluster, its output kept in a log file for failure messages."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_dir: Path):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so stop() reaches the workers it forks
        )

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill_group(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        self.kill_group(signal.SIGKILL)  # anything the process group left behind
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()


class Cluster:
    """`web_nodes` uvicorn servers (one port each) and `worker_clusters` qcluster processes."""

    def __init__(self, env: dict[str, str], log_dir: Path):
        self.env = env
        self.log_dir = log_dir
        self.web: list[tuple[Node, str]] = []
        self.workers: list[Node] = []

    def start_web(self, *, processes: int = 1) -> str:
        port = free_port()
        node = Node(
            f"web{len(self.web) + 1}",
            [
                sys.executable,
                "-m",
                "uvicorn",
                "memory_site.asgi:application",
                "--host",
                LOOPBACK,
                "--port",
                str(port),
                "--workers",
                str(processes),
                "--no-access-log",
                "--timeout-graceful-shutdown",
                "3",
            ],
            self.env,
            self.log_dir,
        )
        url = f"http://{LOOPBACK}:{port}"
        self.web.append((node, url))
        return url

    def start_worker(self, *, workers: int = 1) -> Node:
        node = Node(
            f"worker{len(self.workers) + 1}",
            [sys.executable, "manage.py", "qcluster"],
            self.env | {"Q_WORKERS": str(workers)},
            self.log_dir,
        )
        self.workers.append(node)
        return node

    def wait_ready(self, timeout: float = 90) -> None:
        """Every web node answers /api/health and a worker cluster reported to Redis."""
        deadline = time.monotonic() + timeout
        for node, url in self.web:
            wait_for_port(
                int(url.rsplit(":", 1)[1]),
                timeout=max(1.0, deadline - time.monotonic()),
                process=node.process,
            )
        while self.workers:
            for node in self.workers:
                if node.process.poll() is not None:
                    raise RuntimeError(f"{node.name} exited:\n{node.log_tail()}")
            body = httpx.get(f"{self.web[0][1]}/api/health", timeout=10).json()
            if body.get("worker") == "ok":
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"no worker reported in {timeout} s: {body}")
            time.sleep(0.5)

    def logs(self) -> str:
        return "\n".join(
            f"--- {node.name}\n{node.log_tail()}"
            for node in [*(node for node, _ in self.web), *self.workers]
        )

    def stop(self) -> None:
        for node in [*(node for node, _ in self.web), *self.workers]:
            node.stop()
