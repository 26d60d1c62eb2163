"""Shared fixtures: users with tokens, API clients, and the loopback OpenAI-compatible server."""

from __future__ import annotations

import os
import socket
import threading
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402
import uvicorn  # noqa: E402
from django.core.checks import run_checks  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from memory_site.checks import TAG as CHECK_TAG  # noqa: E402
from tests.factories import make_user  # noqa: E402
from tests.fake_openai import FakeOpenAIServer  # noqa: E402


@pytest.fixture
def user(db):
    return make_user("alice")


@pytest.fixture
def other_user(db):
    return make_user("bob")


def client_for(user) -> APIClient:
    from rest_framework.authtoken.models import Token

    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api(user) -> APIClient:
    """An API client authenticated (token) as `user`."""
    return client_for(user)


@pytest.fixture
def other_api(other_user) -> APIClient:
    return client_for(other_user)


@pytest.fixture
def anon_api() -> APIClient:
    return APIClient()


@pytest.fixture
def staff_client(db):
    """A browser client logged in as a superuser staff member named "admin"."""
    from django.test import Client

    from tests.factories import make_user

    admin = make_user("admin", staff=True)
    admin.is_superuser = True
    admin.save()
    client = Client()
    client.force_login(admin)
    return client


@pytest.fixture
def fake_openai(settings):
    """Point the LLM provider at a real OpenAI-compatible server on 127.0.0.1."""
    server = FakeOpenAIServer(dimensions=settings.EMBEDDING_DIMENSIONS).start()
    settings.LLM_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.LLM_MODEL = "gpt-4o-mini"
    settings.LLM_TIMEOUT_SECONDS = 3.0
    settings.LLM_MAX_RETRIES = 0
    yield server
    server.stop()


@pytest.fixture
def fake_openai_embeddings(fake_openai, settings):
    """Also route embeddings to the loopback server (same dimensions as the stored vectors)."""
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_MODEL = "text-embedding-3-small"
    return fake_openai


@pytest.fixture
def fake_embedder(fake_openai_embeddings, settings):
    """Embeddings from the loopback server (fast, inspectable); summaries and headers stay local."""
    settings.LLM_PROVIDER = "local"
    return fake_openai_embeddings


@pytest.fixture
def no_message_hooks(settings):
    """Store messages without the after-message hooks (inline chunk indexing, which may call the
    model, and consolidation): for tests about something else than what a message indexes."""
    settings.MNEMO_AFTER_MESSAGE_HOOKS = []


@pytest.fixture(scope="session", autouse=True)
def mnemo_startup_checks():
    """Stop the run, as `make run` would stop, when a hook or task path does not import."""
    errors = [message for message in run_checks(tags=[CHECK_TAG]) if message.is_serious()]
    if errors:
        listing = "\n".join(str(error) for error in errors)
        pytest.exit(f"Mnemo start-up checks failed:\n{listing}", returncode=3)


@pytest.fixture
def live_url():
    """uvicorn serving memory_site.asgi (the real ASGI app, streaming included) on a free loopback port, in a background thread."""
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


@pytest.fixture(autouse=True)
def context_settings_fresh():
    """Each test reads the settings row it set up: a transactional test's flush deletes the
    row without the signal that clears ContextSettings.current()'s process cache."""
    from context_app.models.context import _settings_cache

    _settings_cache.clear()
    yield
    _settings_cache.clear()


@pytest.fixture
def upload_dir(settings, tmp_path):
    """Uploaded bytes (imports, documents) go to a temporary directory, not var/uploads."""
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    return settings.MNEMO_UPLOAD_DIR
