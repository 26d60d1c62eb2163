"""The configured OpenAI-compatible upstream (OPENAI_BASE_URL / OPENAI_API_KEY), called with
raw HTTP so a request is forwarded field for field and a stream is relayed chunk by chunk.

The provider layer's `LLM` speaks text in, text out; a proxy must not lose tools,
tool calls, response_format or any field it does not know, hence this thin client.
"""

from __future__ import annotations

import asyncio
import weakref
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx
from django.conf import settings

from gateway_app.openai_compat.errors import OpenAIError

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

# One connection pool per event loop (uvicorn runs one; tests may run several servers).
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def upstream_base_url() -> str:
    """The upstream's base URL; OpenAIError 503 when no model provider is configured."""
    if settings.OPENAI_BASE_URL:
        return settings.OPENAI_BASE_URL.rstrip("/")
    if settings.OPENAI_API_KEY:
        return OPENAI_DEFAULT_BASE_URL
    raise OpenAIError(
        503,
        "No upstream model is configured: set OPENAI_BASE_URL (and OPENAI_API_KEY) to the "
        "OpenAI-compatible server Mnemo should forward to.",
        code="upstream_not_configured",
    )


def upstream_client() -> httpx.AsyncClient:
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.LLM_TIMEOUT_SECONDS, connect=10.0),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            # One client serves every user's calls: a cookie the upstream sets in one user's
            # reply must not ride along on the next user's request.
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
        )
        _clients[loop] = client
    return client


def _headers() -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if settings.OPENAI_API_KEY:
        headers["Authorization"] = f"Bearer {settings.OPENAI_API_KEY}"
    return headers


def _unreachable(exc: Exception) -> OpenAIError:
    return OpenAIError(
        502, f"The upstream model server could not be reached: {exc}", code="upstream_error"
    )


async def upstream_open(body: dict, *, stream: bool) -> httpx.Response:
    """POST /chat/completions upstream; with `stream` the body is left unread (the caller
    must `aclose()` the response). Raises OpenAIError 502 when the server cannot be reached."""
    client = upstream_client()
    request = client.build_request(
        "POST", f"{upstream_base_url()}/chat/completions", json=body, headers=_headers()
    )
    try:
        return await client.send(request, stream=stream)
    except httpx.HTTPError as exc:
        raise _unreachable(exc) from exc


async def upstream_error(response: httpx.Response) -> OpenAIError:
    """The upstream's own error, passed on: 4xx keep their status and message (a bad model
    name is the caller's to fix), 5xx become 502."""
    try:
        await response.aread()
        payload = response.json()
    except (httpx.HTTPError, ValueError):
        payload = {}
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or "")
        code = str(error.get("code") or "upstream_error")
        param = error.get("param") if isinstance(error.get("param"), str) else None
    else:
        message, code, param = (
            (response.text[:300] if response.text else ""),
            "upstream_error",
            None,
        )
    status = response.status_code if 400 <= response.status_code < 500 else 502
    return OpenAIError(
        status,
        f"Upstream model server answered {response.status_code}: {message or 'no message'}",
        code=code,
        param=param,
    )


async def upstream_models() -> dict | None:
    """The upstream's GET /models body, or None when it has none (or cannot be reached)."""
    client = upstream_client()
    try:
        response = await client.get(f"{upstream_base_url()}/models", headers=_headers())
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        payload = response.json()
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        return None
    return payload
