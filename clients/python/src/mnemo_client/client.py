"""`Mnemo`, the synchronous client, and `AsyncMnemo`, the same surface for asyncio."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from mnemo_client import _core
from mnemo_client._core import (
    DEFAULT_TIMEOUT,
    TERMINAL_IMPORT_STATUSES,
    Entities,
    Me,
    Memories,
    Profile,
    Request,
    RetryPolicy,
    Sessions,
    SSEParser,
    Webhooks,
    auth_headers,
    read,
    retryable,
    sse_events,
    transport_error,
)
from mnemo_client.errors import MnemoError, error_from_response
from mnemo_client.models import ChatEvent, CommitResult, ImportJob, SearchHit, SearchResult

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
# The header a chat app's key names its end user with (the key's end-user grant says which).
DEFAULT_END_USER_HEADER = "X-OpenWebUI-User-Id"


def _settings(base_url, api_key):
    base_url = base_url or os.environ.get("MNEMO_BASE_URL") or DEFAULT_BASE_URL
    api_key = api_key or os.environ.get("MNEMO_API_KEY")
    if not api_key:
        raise ValueError("Give api_key= or set MNEMO_API_KEY (manage.py issue_token USERNAME).")
    return base_url.rstrip("/"), api_key


def _mem0_turns(messages) -> list[dict]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [{"role": m["role"], "content": m["content"]} for m in messages]


class _Client:
    """What `Mnemo` and `AsyncMnemo` set up alike: the server, the key, the retry policy, the
    HTTP client of their kind (`_http_class`) and the resource groups."""

    _http_class: type
    _memories_group: type
    _imports_group: type

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        end_user: str | None = None,
        end_user_header: str = DEFAULT_END_USER_HEADER,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
    ):
        base_url, api_key = _settings(base_url, api_key)
        self.end_user_header = end_user_header
        self.retry = retry or RetryPolicy()
        self._http = self._http_class(
            base_url=base_url,
            timeout=timeout,
            headers=auth_headers(api_key, end_user, end_user_header),
            transport=transport,
        )
        self.sessions = Sessions(self)
        self.memories = self._memories_group(self)
        self.entities = Entities(self)
        self.profile = Profile(self)
        self.webhooks = Webhooks(self)
        self.me = Me(self)
        self.imports = self._imports_group(self)


def _opened_files(files: ExitStack, request: Request) -> list | None:
    """The multipart parts of an upload's paths, opened for the request's lifetime."""
    if not request.files:
        return None
    return [("files", files.enter_context(open(path, "rb"))) for path in request.files]


def _search(query: str, user_id, limit, options: dict, header: str) -> Request:
    """The search request; `user_id` acts for that end user, `limit` is `top_k` (mem0's)."""
    if limit is not None:
        options.setdefault("top_k", limit)
    request = _core.search_request(query, **options)
    if user_id:
        request.headers[header] = user_id
    return request


class SyncMemories(Memories):
    def search(self, query: str, *, top_k: int | None = None, **options) -> list[SearchHit]:
        """The ranked results of `Mnemo.search` (each with `content`, `relevance`, `why`)."""
        return self._client.search(query, top_k=top_k, **options)["items"]


class AsyncMemories(Memories):
    async def search(self, query: str, *, top_k: int | None = None, **options) -> list[SearchHit]:
        return (await self._client.search(query, top_k=top_k, **options))["items"]


class Imports:
    def __init__(self, client: Mnemo):
        self._client = client

    def upload(
        self, paths: Iterable[str | Path], *, app_id=None, project_id=None, agent_id=None
    ) -> ImportJob:
        """Upload chat exports (ChatGPT, Claude, Gemini... or zips); 202 with the job."""
        return self._client._call(
            _core.upload_request(paths, app_id=app_id, project_id=project_id, agent_id=agent_id)
        )

    def get(self, import_id: str) -> ImportJob:
        return self._client._call(_core.build("imports.get", path={"import_id": import_id}))

    def wait(self, import_id: str, *, timeout: float = 600.0, interval: float = 1.0) -> ImportJob:
        """Poll until the job is done, partial or failed; MnemoError(code "timeout") after
        `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.get(import_id)
            if job["status"] in TERMINAL_IMPORT_STATUSES:
                return job
            if time.monotonic() > deadline:
                raise MnemoError(0, "timeout", f"import {import_id} still {job['status']}")
            time.sleep(interval)


class Mnemo(_Client):
    """A client of one Mnemo server with one API key.

    Every call has a timeout (`timeout` seconds, per call with `timeout=` on the transport
    level); 503 answers (the database was briefly away), 502/504 from a proxy, and reads that
    got no answer are retried with backoff (`Retry-After` when the server sends it). Any other
    error answer raises `MnemoError` with Mnemo's `code`, `message`, `field` and the status.
    `end_user` acts for one end user of a chat app whose key has an end-user grant.
    """

    _http_class = httpx.Client
    _memories_group = SyncMemories
    _imports_group = Imports

    def __enter__(self) -> Mnemo:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- transport -------------------------------------------------------------------------

    def _send(self, request: Request) -> httpx.Response:
        with ExitStack() as files:
            upload = _opened_files(files, request)
            return self._http.request(
                request.method,
                request.path,
                json=request.json,
                params=request.params,
                files=upload,
                data=request.data,
                headers=request.headers,
            )

    def _call(self, request: Request) -> Any:
        for attempt in range(self.retry.attempts):
            response = None
            try:
                response = self._send(request)
            except httpx.HTTPError as exc:
                if not retryable(request, None) or attempt == self.retry.attempts - 1:
                    raise transport_error(exc) from exc
            if response is not None and (
                not retryable(request, response) or attempt == self.retry.attempts - 1
            ):
                return read(response)
            time.sleep(self.retry.wait(attempt, response))
        raise AssertionError("unreachable")

    # -- operations ------------------------------------------------------------------------

    def commit(self, session_id: str) -> CommitResult:
        """Commit to Memory: distill the session's new messages into facts (exactly once)."""
        return self._call(_core.commit_request(session_id))

    def search(self, query: str, *, user_id: str | None = None, limit: int | None = None,
               **options) -> SearchResult:  # fmt: skip
        """Ranked hybrid search of the caller's memories (`top_k`, `mode`, `sources`, `app_id`,
        `filters`, `as_of`); `user_id` acts for that end user, `limit` is `top_k` (mem0's names)."""
        return self._call(_search(query, user_id, limit, options, self.end_user_header))

    def chat_stream(self, messages: list[dict], *, session_id: str | None = None,
                    context_version: str | None = None, attachments=None,
                    model: str | None = None) -> Iterator[ChatEvent]:  # fmt: skip
        """One chat turn with memory: the events as they arrive (message chunks, then done,
        or error; context with the debug header). The session's open; the turn is stored."""
        request = _core.stream_request(
            messages,
            session_id=session_id,
            context_version=context_version,
            attachments=attachments,
            model=model,
        )
        with self._http.stream(
            request.method, request.path, json=request.json, headers=request.headers
        ) as response:
            if not response.is_success:
                response.read()
                raise error_from_response(response.status_code, _json(response), response.text)
            yield from sse_events(response.iter_lines())

    def add(
        self, messages, *, user_id: str | None = None, metadata: dict | None = None
    ) -> CommitResult:
        """mem0's `add`: remember what these messages say. They are stored as one session's
        turns and committed to memory (facts, with history); returns the commit result."""
        headers = {self.end_user_header: user_id} if user_id else {}
        session = self._call(_with(_core.build("sessions.new", metadata=metadata), headers))
        for turn in _mem0_turns(messages):
            self._call(
                _with(
                    _core.build(
                        "sessions.message",
                        session_id=session["session_id"],
                        role=turn["role"],
                        content=turn["content"],
                    ),
                    headers,
                )
            )
        result = self._call(_with(_core.commit_request(session["session_id"]), headers))
        self._call(_with(_core.build("sessions.close", session_id=session["session_id"]), headers))
        return result


class AsyncImports:
    def __init__(self, client: AsyncMnemo):
        self._client = client

    async def upload(self, paths, *, app_id=None, project_id=None, agent_id=None) -> ImportJob:
        return await self._client._call(
            _core.upload_request(paths, app_id=app_id, project_id=project_id, agent_id=agent_id)
        )

    async def get(self, import_id: str) -> ImportJob:
        return await self._client._call(_core.build("imports.get", path={"import_id": import_id}))

    async def wait(
        self, import_id: str, *, timeout: float = 600.0, interval: float = 1.0
    ) -> ImportJob:
        deadline = time.monotonic() + timeout
        while True:
            job = await self.get(import_id)
            if job["status"] in TERMINAL_IMPORT_STATUSES:
                return job
            if time.monotonic() > deadline:
                raise MnemoError(0, "timeout", f"import {import_id} still {job['status']}")
            await asyncio.sleep(interval)


class AsyncMnemo(_Client):
    """`Mnemo` for asyncio: the same groups and operations, each awaited."""

    _http_class = httpx.AsyncClient
    _memories_group = AsyncMemories
    _imports_group = AsyncImports

    async def __aenter__(self) -> AsyncMnemo:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, request: Request) -> httpx.Response:
        with ExitStack() as files:
            upload = _opened_files(files, request)
            return await self._http.request(
                request.method,
                request.path,
                json=request.json,
                params=request.params,
                files=upload,
                data=request.data,
                headers=request.headers,
            )

    async def _call(self, request: Request) -> Any:
        for attempt in range(self.retry.attempts):
            response = None
            try:
                response = await self._send(request)
            except httpx.HTTPError as exc:
                if not retryable(request, None) or attempt == self.retry.attempts - 1:
                    raise transport_error(exc) from exc
            if response is not None and (
                not retryable(request, response) or attempt == self.retry.attempts - 1
            ):
                return read(response)
            await asyncio.sleep(self.retry.wait(attempt, response))
        raise AssertionError("unreachable")

    async def commit(self, session_id: str) -> CommitResult:
        return await self._call(_core.commit_request(session_id))

    async def search(self, query: str, *, user_id: str | None = None, limit: int | None = None,
                     **options) -> SearchResult:  # fmt: skip
        return await self._call(_search(query, user_id, limit, options, self.end_user_header))

    async def chat_stream(self, messages: list[dict], *, session_id: str | None = None,
                          context_version: str | None = None, attachments=None,
                          model: str | None = None) -> AsyncIterator[ChatEvent]:  # fmt: skip
        request = _core.stream_request(
            messages,
            session_id=session_id,
            context_version=context_version,
            attachments=attachments,
            model=model,
        )
        async with self._http.stream(
            request.method, request.path, json=request.json, headers=request.headers
        ) as response:
            if not response.is_success:
                await response.aread()
                raise error_from_response(response.status_code, _json(response), response.text)
            parser = SSEParser()
            async for line in response.aiter_lines():
                event = parser.feed(line)
                if event is not None:
                    yield event
            event = parser.flush()
            if event is not None:
                yield event

    async def add(
        self, messages, *, user_id: str | None = None, metadata: dict | None = None
    ) -> CommitResult:
        headers = {self.end_user_header: user_id} if user_id else {}
        session = await self._call(_with(_core.build("sessions.new", metadata=metadata), headers))
        for turn in _mem0_turns(messages):
            await self._call(
                _with(
                    _core.build(
                        "sessions.message",
                        session_id=session["session_id"],
                        role=turn["role"],
                        content=turn["content"],
                    ),
                    headers,
                )
            )
        result = await self._call(_with(_core.commit_request(session["session_id"]), headers))
        await self._call(
            _with(_core.build("sessions.close", session_id=session["session_id"]), headers)
        )
        return result


def _with(request: Request, headers: dict) -> Request:
    request.headers.update(headers)
    return request


def _json(response: httpx.Response):
    try:
        return response.json()
    except ValueError:
        return None
