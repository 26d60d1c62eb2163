"""ASGI entry point (uvicorn): streaming responses need it; the MCP server is mounted at /mcp."""

from __future__ import annotations

import json
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
django_application = get_asgi_application()

from django.conf import settings  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402
from starlette.middleware.cors import CORSMiddleware  # noqa: E402

from gateway_app.mcp.http import mcp_asgi_mount  # noqa: E402  (needs Django set up)
from memory_site.metrics import MetricsASGI  # noqa: E402
from memory_site.middleware import body_limit_for  # noqa: E402


async def _send_413(send, limit: int, path: str = "") -> None:
    message = f"Request body is over the {limit}-byte limit."
    error = {"code": "payload_too_large", "message": message}
    if path.startswith("/v1/"):  # the OpenAI-compatible paths answer in OpenAI's error shape
        error = {**error, "type": "invalid_request_error", "param": None}
    body = json.dumps({"error": error}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimitASGI:
    """Refuse oversized bodies before Django reads (and spools) them.

    Django's ASGI handler reads the whole body before any middleware runs, and ignores a body
    sent without Content-Length (chunked). This wrapper answers 413 as soon as the declared
    or received size passes the limit, and buffers chunked bodies (within the limit) so Django
    sees them with a Content-Length.
    """

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = body_limit_for(scope.get("path", ""))
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                length = limit + 1
            if length > limit:
                return await _send_413(send, limit, scope.get("path", ""))
            return await self.app(scope, receive, send)
        if headers.get(b"transfer-encoding", b"").lower() != b"chunked":
            return await self.app(scope, receive, send)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return await _send_413(send, limit, scope.get("path", ""))
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        new_headers = [
            (k, v)
            for k, v in scope["headers"]
            if k not in (b"transfer-encoding", b"content-length")
        ]
        new_headers.append((b"content-length", str(len(body)).encode()))
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app({**scope, "headers": new_headers}, replay, send)


# The OpenAI-compatible API authenticates by API key, sets no cookie and renders no page: of
# the site's middleware it needs only the character guard, in OpenAI's error shape (its body
# limit is BodyLimitASGI's).
GATEWAY_PATH = "/v1/"
GATEWAY_MIDDLEWARE = ["gateway_app.openai_compat.middleware.OpenAIGuardMiddleware"]


class SlimASGIHandler(ASGIHandler):
    """Django's ASGI handler with its own, shorter middleware list.

    Each of Django's own middleware (sessions, CSRF, messages, security headers...) hands an
    async view's request to a thread and back for its process_request and process_response:
    the site's stack cost a gateway call about 1.5 ms of CPU and latency before its first
    token (bench/proxy.py). The list is swapped in only while the chain is built, at start.
    """

    def __init__(self, middleware: list[str]):
        self.middleware = middleware
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        site_middleware = settings.MIDDLEWARE
        settings.MIDDLEWARE = self.middleware
        try:
            super().load_middleware(is_async=is_async)
        finally:
            settings.MIDDLEWARE = site_middleware


class GatewayRoute:
    """ASGI: the OpenAI-compatible paths go to `gateway`, everything else to `app`."""

    def __init__(self, app, gateway, *, prefix: str = GATEWAY_PATH):
        self.app = app
        self.gateway = gateway
        self.prefix = prefix

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope.get("path", "").startswith(self.prefix):
            return await self.gateway(scope, receive, send)
        return await self.app(scope, receive, send)


# CORS: the paths a browser app on another origin may call with a token (no cookies), and
# the headers it sends and reads.
CORS_PATHS = ("/api/", "/v1/", "/mcp")
CORS_ALLOW_HEADERS = (
    "accept",
    "authorization",
    "content-type",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "x-mnemo-conversation-id",
    "x-mnemo-memory",
    "x-mnemo-session-id",
    "x-mnemo-task",
    "x-reggie-context",
    "x-reggie-context-debug",
)
CORS_EXPOSE_HEADERS = (
    "mcp-session-id",
    "x-mnemo-context",
    "x-mnemo-context-hash",
    "x-mnemo-session-id",
)


class CorsASGI:
    """CORS for the origins in MNEMO_CORS_ORIGINS on CORS_PATHS (Starlette's middleware),
    outermost, so every answer carries it: Django's, the slim /v1 stack's, the MCP server's
    and BodyLimitASGI's 413. Other paths and unlisted origins get no CORS headers."""

    def __init__(self, app):
        self.app = app
        self._cors: dict[tuple[str, ...], CORSMiddleware] = {}

    async def __call__(self, scope, receive, send):
        origins = tuple(settings.MNEMO_CORS_ORIGINS)
        if (
            scope["type"] != "http"
            or not origins
            or not scope.get("path", "").startswith(CORS_PATHS)
        ):
            return await self.app(scope, receive, send)
        cors = self._cors.get(origins)
        if cors is None:
            cors = self._cors[origins] = CORSMiddleware(
                self.app,
                allow_origins=origins,
                allow_methods=("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
                allow_headers=CORS_ALLOW_HEADERS,
                expose_headers=CORS_EXPOSE_HEADERS,
                allow_credentials=False,
            )
        return await cors(scope, receive, send)


gateway_application = SlimASGIHandler(GATEWAY_MIDDLEWARE)

# /mcp is the MCP server (Streamable HTTP), /v1/ Django with the slim stack; the rest Django.
application = MetricsASGI(
    CorsASGI(
        BodyLimitASGI(
            mcp_asgi_mount(GatewayRoute(django_application, gateway_application), path="/mcp")
        )
    )
)
