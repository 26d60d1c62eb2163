"""Prometheus metrics: what an operator scrapes from GET /metrics.

Every process records into `prometheus_client`'s default registry; with
PROMETHEUS_MULTIPROC_DIR set (`manage.py serve` sets it, one folder per run under
DATA_DIR/metrics, for the web workers and the task cluster it starts) each process writes its samples there and a scrape sums them
(prometheus_client's multi-process mode), so one scrape of any web worker sees the whole node.
Queue depths are read from the database at scrape time. The endpoint answers only a request
with `Authorization: Bearer <MNEMO_METRICS_TOKEN>` (or from an address in
MNEMO_METRICS_ALLOW); docs/OPERATIONS.md says what to alert on.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable, Iterable
from functools import lru_cache

from django.conf import settings
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

METRICS_PATH = "/metrics"
# Seconds; from a cached pack (~5 ms) to a slow upstream turn (tens of seconds).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
SEARCH_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1)

REQUESTS = Counter(
    "mnemo_http_requests_total", "HTTP requests answered.", ["route", "method", "status"]
)
REQUEST_SECONDS = Histogram(
    "mnemo_http_request_duration_seconds",
    "Time to the end of the response (a stream: to its last byte).",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
SEARCH_SECONDS = Histogram(
    "mnemo_search_duration_seconds",
    "memory_search: the database and ranking, the query embedding apart.",
    ["mode"],
    buckets=SEARCH_BUCKETS,
)
SEARCH_EMBEDDING_SECONDS = Histogram(
    "mnemo_search_embedding_duration_seconds",
    "Query embeddings memory_search made itself.",
    buckets=SEARCH_BUCKETS,
)
PACK_SECONDS = Histogram(
    "mnemo_context_pack_duration_seconds",
    "prepare_context, by outcome (built, reused, skipped, failed).",
    ["status"],
    buckets=LATENCY_BUCKETS,
)
PACK_PARTS_SKIPPED = Counter(
    "mnemo_context_pack_parts_skipped_total",
    "Parts a pack left out to stay within its latency budget.",
    ["part"],
)
EMBEDDED_TEXTS = Counter(
    "mnemo_embedded_texts_total", "Texts embedded, by embedder backend.", ["backend"]
)
IMPORTED_PAIRS = Counter("mnemo_imported_pairs_total", "Exchange pairs stored by imports.")
WEBHOOK_ATTEMPTS = Counter(
    "mnemo_webhook_attempts_total",
    "Webhook delivery attempts by event and outcome (delivered, retry, failed).",
    ["event", "outcome"],
)
WEBHOOK_SECONDS = Histogram(
    "mnemo_webhook_attempt_duration_seconds", "Time a receiver took to answer an attempt."
)


@lru_cache(maxsize=4096)
def route_of(path: str) -> str:
    """A bounded label for a request path: the URL pattern Django resolves it to, "/mcp", or
    "other" (so a scan of random paths cannot blow up the series count). Cached: it runs
    before Django's own resolve of the same path, on every request."""
    if path == "/mcp" or path.startswith("/mcp/"):
        return "/mcp"
    if path.startswith("/static/"):
        return "/static/"
    from django.urls import Resolver404, resolve

    try:
        match = resolve(path)
    except Resolver404:
        return "other"
    return "/" + match.route if match.route else (match.view_name or "other")


# Scrape-time gauges of the apps' own tables (a backlog, a queue), registered by each app's
# AppConfig.ready(): this module sits beneath every app and reads none of their models.
SCRAPE_GAUGES: list[Callable[[], Iterable]] = []


def scrape_gauges_register(gauges: Callable[[], Iterable]) -> None:
    """Add a function yielding metric families, called at every scrape (once per process)."""
    if gauges not in SCRAPE_GAUGES:
        SCRAPE_GAUGES.append(gauges)


class QueueCollector:
    """Backlogs read at scrape time: the task queue, failed tasks, the apps' own gauges."""

    def collect(self):
        from django.db import DatabaseError, connection
        from django_q.models import Failure, OrmQ

        try:
            queued = OrmQ.objects.count() if "orm" in settings.Q_CLUSTER else None
            failed = Failure.objects.count()
            families = [family for gauges in SCRAPE_GAUGES for family in gauges()]
        except DatabaseError:
            yield GaugeMetricFamily(
                "mnemo_database_up", "Whether the scrape could read the database.", value=0
            )
            return
        finally:
            connection.close_if_unusable_or_obsolete()
        yield GaugeMetricFamily(
            "mnemo_database_up", "Whether the scrape could read the database.", value=1
        )
        if queued is not None:
            yield GaugeMetricFamily(
                "mnemo_task_queue_depth", "Tasks waiting in the django-q queue.", value=queued
            )
        yield GaugeMetricFamily(
            "mnemo_tasks_failed", "Failed django-q tasks kept for inspection.", value=failed
        )
        yield from families
        yield from _pool_gauges(connection)


def _pool_gauges(connection):
    """The database pool of the process answering the scrape: its size, idle connections and
    requests waiting for one (saturation: waiting > 0 while available == 0)."""
    pool = getattr(connection, "pool", None)
    if pool is None:
        return
    stats = pool.get_stats()
    for name, key, help_text in (
        ("mnemo_db_pool_size", "pool_size", "Connections the database pool holds."),
        ("mnemo_db_pool_available", "pool_available", "Idle connections in the pool."),
        ("mnemo_db_pool_waiting", "requests_waiting", "Requests waiting for a connection."),
        ("mnemo_db_pool_max", None, "The pool's maximum size."),
    ):
        value = pool.max_size if key is None else stats.get(key, 0)
        yield GaugeMetricFamily(name, help_text, value=value)


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY

        registry = REGISTRY
    return registry


_queue_collector = QueueCollector()


def metrics_text() -> bytes:
    """The exposition text: every process's samples (multi-process mode) and the queues."""
    registry = _registry()
    body = generate_latest(registry)
    extra = CollectorRegistry()
    extra.register(_queue_collector)
    return body + generate_latest(extra)


def metrics_allowed(headers: dict[bytes, bytes], client_host: str | None) -> bool:
    token = settings.MNEMO_METRICS_TOKEN
    sent = headers.get(b"authorization", b"").decode("latin-1")
    if token and hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
        return True
    return bool(client_host) and client_host in settings.MNEMO_METRICS_ALLOW


class MetricsASGI:
    """Outermost ASGI layer: serves GET /metrics and times every other HTTP request."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        if path == METRICS_PATH:
            return await self._serve(scope, send)
        started = time.perf_counter()
        status = {"code": 500}

        async def timed_send(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            route, method = route_of(path), scope.get("method", "")
            REQUESTS.labels(route, method, str(status["code"])).inc()
            REQUEST_SECONDS.labels(route, method).observe(time.perf_counter() - started)

    async def _serve(self, scope, send):
        from asgiref.sync import sync_to_async

        headers = dict(scope.get("headers") or [])
        client = scope.get("client") or (None, None)
        if not metrics_allowed(headers, client[0]):
            body = b'{"error": {"code": "not_authenticated", "message": "Send Authorization: Bearer <MNEMO_METRICS_TOKEN>."}}'
            return await _respond(send, 401, body, b"application/json")
        body = await sync_to_async(metrics_text, thread_sensitive=False)()
        return await _respond(send, 200, body, CONTENT_TYPE_LATEST.encode())


async def _respond(send, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
