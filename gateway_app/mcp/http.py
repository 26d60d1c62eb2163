"""The MCP server over Streamable HTTP, mounted at /mcp inside Mnemo's ASGI app.

Requests to /mcp never reach Django's URL routing: `McpMount` checks the Bearer (or Token)
API key, refuses a Host outside ALLOWED_HOSTS, and hands the request to the SDK's session
manager with the user attached to the ASGI scope. The server is stateless (no MCP session
ids): every request carries its key and stands alone, so any of several web processes
(WEB_WORKERS) can answer it and nothing one user opened can be reused by another.

The session manager needs a running task group for its lifetime. Django answers no ASGI
lifespan events, so the mount starts the manager on the first request of each event loop
(uvicorn runs one; tests may run several servers in one process) and answers lifespan itself
so a shutdown stops the managers cleanly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from gateway_app.auth import token_from_header, user_for_token
from gateway_app.mcp.server import mcp_server_build
from gateway_app.services.end_users import EndUserRefused, acting_user, lower_headers

logger = logging.getLogger(__name__)

SCOPE_USER_ID = "mnemo.user_id"


def http_user_resolver(ctx: Context):
    """The user the request's API key belongs to (set on the scope by `McpMount`)."""
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    user_id = scope.get(SCOPE_USER_ID)
    if user_id is None:
        return None
    return get_user_model().objects.filter(pk=user_id, is_active=True).first()


def _user_id_for_key(key: str, headers: dict) -> int | None:
    """The id of the user a call with `key` acts for: the key's owner or the end user its
    headers name (gateway_app.services.end_users); None for an unknown key. Raises
    EndUserRefused for an end-user identity the key does not accept."""
    try:
        user = user_for_token(key)
        return acting_user(user, headers).pk if user is not None else None
    finally:
        close_old_connections()


async def _send_json(send, status: int, body: dict, headers: list[tuple[bytes, bytes]] = ()):
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


class _Running:
    """One MCP server and its session manager, running in one event loop."""

    def __init__(self):
        self.server = mcp_server_build(resolve_user=http_user_resolver)
        # Host checks are done by the mount against ALLOWED_HOSTS; every request needs a key.
        self.server.streamable_http_app(
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = self.server.session_manager
        self.ready = asyncio.Event()
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        async def keep_running():
            async with self.manager.run():
                self.ready.set()
                await asyncio.Event().wait()

        self.task = asyncio.get_running_loop().create_task(keep_running(), name="mcp-sessions")
        await self.ready.wait()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down
                pass


class McpMount:
    """ASGI: `path` (and below) goes to the MCP server, everything else to `app`."""

    def __init__(self, app, *, path: str = "/mcp"):
        self.app = app
        self.path = path.rstrip("/")
        self._running: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Running] = (
            weakref.WeakKeyDictionary()
        )
        self._starting: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self._lifespan(receive, send)
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == self.path or path.startswith(self.path + "/")):
            return await self._mcp(scope, receive, send)
        return await self.app(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                running = self._running.pop(asyncio.get_running_loop(), None)
                if running is not None:
                    await running.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _manager(self):
        loop = asyncio.get_running_loop()
        running = self._running.get(loop)
        if running is not None:
            return running.manager
        lock = self._starting.setdefault(loop, asyncio.Lock())
        async with lock:
            running = self._running.get(loop)
            if running is None:
                running = _Running()
                await running.start()
                self._running[loop] = running
        return running.manager

    async def _mcp(self, scope, receive, send) -> None:
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        domain, _ = split_domain_port(host)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            return await _send_json(
                send, 400, {"error": {"code": "bad_host", "message": "Host not allowed."}}
            )
        key = token_from_header(headers.get(b"authorization", b"").decode("latin-1"))
        try:
            user_id = (
                await sync_to_async(_user_id_for_key, thread_sensitive=False)(
                    key, lower_headers(headers.items())
                )
                if key
                else None
            )
        except EndUserRefused as exc:
            return await _send_json(
                send,
                401,
                {"error": {"code": "invalid_end_user", "message": str(exc)}},
                [(b"www-authenticate", b'Bearer realm="mnemo"')],
            )
        if user_id is None:
            return await _send_json(
                send,
                401,
                {
                    "error": {
                        "code": "not_authenticated",
                        "message": "Send your Mnemo API token as `Authorization: Bearer <token>`.",
                    }
                },
                [(b"www-authenticate", b'Bearer realm="mnemo"')],
            )
        principal = AuthenticatedUser(
            AccessToken(token=key, client_id=f"mnemo-user-{user_id}", scopes=[])
        )
        manager = await self._manager()
        await manager.handle_request(
            {**scope, "user": principal, SCOPE_USER_ID: user_id}, receive, send
        )


def mcp_asgi_mount(app, *, path: str = "/mcp") -> McpMount:
    return McpMount(app, path=path)
