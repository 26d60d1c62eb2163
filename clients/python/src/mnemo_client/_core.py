"""What the sync and async clients share: building a request from an operation, reading the
answer, the retry policy, the SSE reader, and the resource groups (which return whatever the
client's `_call` returns: a value for `Mnemo`, an awaitable for `AsyncMnemo`)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from mnemo_client.errors import MnemoError, error_from_response
from mnemo_client.operations import OPERATIONS

DEFAULT_TIMEOUT = 30.0
# Statuses worth another try: the database was briefly down, or a proxy in front was.
RETRY_STATUSES = frozenset({502, 503, 504})
MAX_RETRY_WAIT = 30.0


@dataclass
class RetryPolicy:
    """Up to `attempts` tries on 503 (or 502/504 from a proxy, or no answer at all for a
    read); the wait is the server's `Retry-After`, else `base * 2**n` with jitter."""

    attempts: int = 4
    base: float = 0.5

    def wait(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            after = response.headers.get("retry-after", "")
            if after.isdigit():
                return min(float(after), MAX_RETRY_WAIT)
        return min(self.base * 2**attempt * (0.5 + random.random()), MAX_RETRY_WAIT)


@dataclass
class Request:
    method: str
    path: str
    json: dict | None = None
    params: dict | None = None
    files: list | None = None
    data: dict | None = None
    stream: bool = False
    headers: dict = field(default_factory=dict)


def _clean(values: dict) -> dict:
    return {key: value for key, value in values.items() if value is not None}


def build(name: str, *, path: dict | None = None, **values: Any) -> Request:
    """The request of operation `name` with the given fields (None ones left out)."""
    operation = OPERATIONS[name]
    values = _clean(values)
    unknown = set(values) - set(operation.body) - set(operation.query)
    if unknown:
        raise TypeError(f"{name} takes no {', '.join(sorted(unknown))}")
    url = operation.path.format(**(path or {}))
    request = Request(operation.method, url)
    query = {key: values[key] for key in operation.query if key in values}
    body = {key: values[key] for key in operation.body if key in values}
    if query:
        request.params = query
    if body:
        request.json = body
    return request


def read(response: httpx.Response) -> Any:
    """The JSON of a success; MnemoError for anything else."""
    if response.status_code == 204 or not response.content:
        if response.is_success:
            return None
    try:
        body = response.json()
    except ValueError:
        body = None
    if not response.is_success:
        raise error_from_response(response.status_code, body, response.text)
    return body


def retryable(request: Request, response: httpx.Response | None) -> bool:
    if response is None:
        # No answer: only a read is safe to send again.
        return request.method in ("GET", "HEAD")
    return response.status_code in RETRY_STATUSES


def transport_error(exc: httpx.HTTPError) -> MnemoError:
    code = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection_error"
    return MnemoError(0, code, f"{type(exc).__name__}: {exc}")


class SSEParser:
    """Server-sent events, one line at a time: `feed` returns an event when a line ends one."""

    def __init__(self):
        self.name, self.data = "message", []

    def feed(self, line: str) -> dict | None:
        if line == "":
            event = self.flush()
            return event
        if line.startswith("event:"):
            self.name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            self.data.append(line[len("data:") :].strip())
        return None  # a comment (":"), or a field still gathering

    def flush(self) -> dict | None:
        event = (
            {"event": self.name, "data": json.loads("\n".join(self.data))} if self.data else None
        )
        self.name, self.data = "message", []
        return event


def sse_events(lines: Iterable[str]) -> Iterable[dict]:
    """Server-sent events from the stream's lines: {"event", "data"} per event."""
    parser = SSEParser()
    for line in lines:
        event = parser.feed(line)
        if event is not None:
            yield event
    event = parser.flush()
    if event is not None:
        yield event


def auth_headers(api_key: str, end_user: str | None, end_user_header: str) -> dict:
    headers = {"Authorization": f"Token {api_key}", "Accept": "application/json"}
    if end_user:
        headers[end_user_header] = end_user
    return headers


class _Group:
    def __init__(self, client):
        self._client = client

    def _call(self, name: str, **kwargs):
        return self._client._call(build(name, **kwargs))


class Sessions(_Group):
    def create(self, *, title=None, app_id=None, agent_id=None, project_id=None, metadata=None):
        return self._call(
            "sessions.new",
            title=title,
            app_id=app_id,
            agent_id=agent_id,
            project_id=project_id,
            metadata=metadata,
        )

    def heartbeat(self, session_id: str):
        return self._call("sessions.heartbeat", session_id=str(session_id))

    def close(self, session_id: str):
        return self._call("sessions.close", session_id=str(session_id))

    def add_message(self, session_id: str, *, role: str, content: str, model=None):
        """Log one turn (for apps that call their own model); hooks index it at once."""
        return self._call(
            "sessions.message", session_id=str(session_id), role=role, content=content, model=model
        )

    def list(self, *, app_id=None, page=None, page_size=None):
        return self._call("sessions.list", app_id=app_id, page=page, page_size=page_size)

    def get(self, session_id: str):
        return self._call("sessions.get", path={"session_id": session_id})


class Memories(_Group):
    def add(self, content: str, *, project_id=None):
        """Remember one fact (status added, updated, known or duplicate)."""
        return self._call("memories.add", text=content, project_id=project_id)

    def list(self, *, source=None, session_id=None, project_id=None, app_id=None, q=None,
             page=None, page_size=None):  # fmt: skip
        return self._call(
            "memories.list",
            source=source,
            session_id=session_id,
            project_id=project_id,
            app_id=app_id,
            q=q,
            page=page,
            page_size=page_size,
        )

    def get(self, memory_id: int):
        return self._call("memories.get", path={"memory_id": memory_id})

    def update(self, memory_id: int, *, content=None, topics=None, metadata=None,
               project_id=None, reason=None):  # fmt: skip
        return self._call(
            "memories.update",
            path={"memory_id": memory_id},
            content=content,
            topics=topics,
            metadata=metadata,
            project_id=project_id,
            reason=reason,
        )

    def delete(self, memory_id: int):
        return self._call("memories.delete", path={"memory_id": memory_id})

    def history(self, memory_id: int):
        return self._call("memories.history", path={"memory_id": memory_id})


class Entities(_Group):
    def list(self, *, type=None, bucket=None, q=None, app_id=None, page=None, page_size=None):
        return self._call(
            "entities.list",
            type=type,
            bucket=bucket,
            q=q,
            app_id=app_id,
            page=page,
            page_size=page_size,
        )

    def get(self, entity_id: int):
        return self._call("entities.get", path={"entity_id": entity_id})

    def merge(self, target_id: int, source_ids: list[int]):
        return self._call("entities.merge", target_id=target_id, source_ids=list(source_ids))


class Profile(_Group):
    def get(self, *, app_id=None, include_history=None):
        return self._call("profile.get", app_id=app_id, include_history=include_history)

    def update(self, *, add=None, update=None, delete=None, app_id=None):
        return self._call(
            "profile.update", app_id=app_id, add=add or [], update=update or [],
            delete=delete or [],
        )  # fmt: skip


class Webhooks(_Group):
    def create(self, url: str, *, events=None, description=None):
        return self._call("webhooks.create", url=url, events=events, description=description)

    def list(self):
        return self._call("webhooks.list")

    def delete(self, endpoint_id: str):
        return self._call("webhooks.delete", path={"endpoint_id": endpoint_id})


class Me(_Group):
    def export(self):
        return self._call("me.export")

    def erase(self, *, confirm: str):
        """Erase everything Mnemo holds about the caller; `confirm` is the caller's username."""
        return self._call("me.erase", confirm=confirm)


def upload_request(paths, *, app_id=None, project_id=None, agent_id=None) -> Request:
    """The multipart request of `imports.upload`: one path or several (files are opened by
    the caller's transport)."""
    request = Request("POST", "/api/v1/imports")
    single = isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__")
    request.files = [str(path) for path in ([paths] if single else paths)]
    request.data = _clean({"app_id": app_id, "project_id": project_id, "agent_id": agent_id})
    return request


def commit_request(session_id: str) -> Request:
    return build("memory.commit", session_id=str(session_id))


def search_request(query: str, **options) -> Request:
    return build("search", query=query, **options)


def stream_request(messages: list[dict], *, session_id=None, context_version=None,
                   attachments=None, model=None) -> Request:  # fmt: skip
    request = build(
        "chat.stream",
        messages=messages,
        session_id=str(session_id) if session_id else None,
        context_version=context_version,
        attachments=attachments,
        model=model,
    )
    request.stream = True
    request.headers = {"Accept": "text/event-stream"}
    return request


TERMINAL_IMPORT_STATUSES = frozenset({"done", "partial", "failed"})
