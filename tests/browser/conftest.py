"""Headless Chromium against the real ASGI app.

The app is served by uvicorn on a free loopback port (streaming needs ASGI: under WSGI Django
would buffer the whole SSE body). Playwright's sync API runs an event loop in the test's thread,
so database reads in the test body go through `db_call`, which runs them in a worker thread.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


def chromium_or_skip() -> str:
    """The Chromium binary; without it the browser tests fail under CI and skip elsewhere."""
    found = str(CHROMIUM) if CHROMIUM.exists() else shutil.which("chromium")
    if found:
        return found
    message = (
        "Debian's chromium is not installed (/usr/bin/chromium): run `make browser-deps` "
        "(apt-get install chromium) to run the browser tests."
    )
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def db_call(function, *args, **kwargs):
    """Run ORM work outside the thread that hosts Playwright's event loop, then close that
    thread's connection (so the test database can be flushed and dropped)."""
    from django.db import connections

    def run():
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def asgi_server(transactional_db):
    """The project's ASGI application (plus static files) on http://127.0.0.1:<port>."""
    import uvicorn
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
    from django.core.asgi import get_asgi_application
    from django.db import connection

    port = _free_port()
    config = uvicorn.Config(
        ASGIStaticFilesHandler(get_asgi_application()),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-browser-tests", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    # Server threads may still hold connections to the test database; end them so the
    # database can be flushed now and dropped at the end of the run.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture
def browser(asgi_server):
    """A headless Chromium (Debian's package, never a downloaded one). Depends on the server
    so that it closes first: Playwright's loop must be gone before the server's teardown
    touches the database from this thread."""
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def screenshot():
    """`screenshot(page, name)` writes artifacts/screenshots/<name>.png (git-ignored)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
