"""Fixtures for the gateway: Mnemo served by uvicorn on loopback, the fake upstream, tokens."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn
from rest_framework.authtoken.models import Token


@pytest.fixture
def live_url():
    """uvicorn serving memory_site.asgi on a free loopback port, in a background thread."""
    from memory_site.asgi import application

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            application, log_level="warning", lifespan="off", timeout_graceful_shutdown=2
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture
def upstream(fake_embedder, generous_budget):
    """The fake OpenAI-compatible upstream (also the embedder); summaries stay local."""
    return fake_embedder


@pytest.fixture
def generous_budget(db):
    """A context-build budget no busy test machine misses (the default is 300 ms)."""
    from context_app.models import ContextSettings

    ContextSettings.objects.update_or_create(pk=1, defaults={"latency_budget_ms": 5000})


def token_for(user) -> str:
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
