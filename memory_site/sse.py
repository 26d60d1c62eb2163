"""Server-sent events: frame formatting, the keepalive comment and the streaming response.

A frame is `event: <name>\\ndata: <json>\\n\\n`; JSON never contains a raw newline, so one
`data:` line is always enough. Proxies must neither cache nor buffer the stream, and a comment
line (ignored by every SSE client) keeps idle connections alive.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from django.http import StreamingHttpResponse

# Send a comment when nothing else was sent for this long (proxies commonly drop a connection
# after 30-60 s of silence; the contract promises at least one line every 15 s).
KEEPALIVE_SECONDS = 10.0

SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


def sse_event(event: str, data: dict) -> bytes:
    """One SSE frame with a JSON payload (non-ASCII kept as UTF-8)."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"event: {event}\ndata: {payload}\n\n".encode()


def sse_comment(text: str = "keepalive") -> bytes:
    """A comment line: clients ignore it, proxies and load balancers see traffic."""
    return f": {text}\n\n".encode()


async def with_keepalive(
    frames: AsyncIterator[bytes], *, interval: float = KEEPALIVE_SECONDS
) -> AsyncIterator[bytes]:
    """Yield `frames`, inserting a keepalive comment whenever `interval` seconds pass silently.

    The source is pulled by one task at a time (`anext` wrapped in a task, awaited with a
    timeout via `asyncio.wait`), so a slow source is never cancelled by the keepalive timer.
    Closing this generator closes the source.
    """
    iterator = aiter(frames)
    pending: asyncio.Task | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield sse_comment()
                continue
            task, pending = pending, None
            try:
                frame = task.result()
            except StopAsyncIteration:
                return
            yield frame
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            try:
                await pending
            except (asyncio.CancelledError, StopAsyncIteration):
                pass
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            await closer()


def sse_response(
    frames: AsyncIterator[bytes], *, headers: dict | None = None
) -> StreamingHttpResponse:
    """A `text/event-stream` response over an async iterator of frames (served under ASGI)."""
    response = StreamingHttpResponse(frames, content_type="text/event-stream; charset=utf-8")
    for name, value in {**SSE_HEADERS, **(headers or {})}.items():
        response[name] = value
    return response
