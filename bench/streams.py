"""Concurrent chat streams: N SSE streams opened at the same moment, each reply stored once.

For each N in ``--levels`` (25,50,100): N new sessions, then N ``POST /api/v1/ai/chat/stream``
with ``context_version: v2`` (the context pack is built for each) started together against one
uvicorn process (as ``make run`` serves), the model a fake OpenAI-compatible streaming server
in its own process on loopback (tests/fake_openai.py, ``--stream-delay`` seconds between
words). Reported per level: time to first byte p50/p95/max, time to the ``done`` event p50/p95,
errors (a status other than 200, a transport error, an ``event: error``, a stream without
``done``), and, read from the database afterwards, whether every session holds exactly one user
and one assistant message, the assistant's being the streamed text.

    .venv/bin/python bench/streams.py --data-dir /tmp/streams_<branch> [--levels 25,50,100]

The embedded PostgreSQL under ``--data-dir``; tasks queued (no worker), so only the request
path is measured. The load average is printed beside each level (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

import httpx  # noqa: E402

from bench.load import FakeModel, manage, percentile, stop_embedded  # noqa: E402
from tests.deploy.cluster import Cluster, node_environment  # noqa: E402

NOTES = [
    "I booked a ryokan in Kyoto for April.",
    "My brother Tomas is a marine biologist in Lisbon.",
    "I prefer vegetarian food when travelling.",
    "I play the cello in an amateur orchestra on Thursdays.",
    "The Kyoto trip budget is 2,400 euros for two weeks.",
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="/tmp/mnemo_streams", help="embedded database")
    parser.add_argument("--levels", default="25,50,100", help="concurrent streams per round")
    parser.add_argument(
        "--stream-delay", type=float, default=0.05, help="fake model: seconds between words"
    )
    return parser.parse_args()


def parse_sse(raw: str) -> list[tuple[str, dict]]:
    """(event, data) of each frame; comments (keepalives) skipped."""
    events = []
    for frame in raw.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in frame.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data:
            try:
                events.append((name, json.loads("\n".join(data))))
            except ValueError:
                events.append((name, {"raw": "\n".join(data)}))
    return events


async def one_stream(client: httpx.AsyncClient, session_id: str, index: int, start: float):
    """One streamed turn: (ttfb, seconds to done, error or '', streamed reply)."""
    await asyncio.sleep(max(0.0, start - time.perf_counter()))
    body = {
        "session_id": session_id,
        "context_version": "v2",
        "messages": [{"role": "user", "content": f"What do you remember about Kyoto? ({index})"}],
    }
    began = time.perf_counter()
    ttfb = None
    raw = bytearray()
    try:
        async with client.stream("POST", "/api/v1/ai/chat/stream", json=body) as response:
            async for piece in response.aiter_raw():
                if ttfb is None:
                    ttfb = time.perf_counter() - began
                raw += piece
            status = response.status_code
    except httpx.HTTPError as exc:
        return ttfb, time.perf_counter() - began, f"transport: {type(exc).__name__}", ""
    total = time.perf_counter() - began
    if status != 200:
        return ttfb, total, f"status {status}", ""
    events = parse_sse(raw.decode("utf-8", "replace"))
    names = Counter(name for name, _ in events)
    reply = "".join(data.get("chunk", "") for name, data in events if name == "message")
    if names["error"]:
        error = next(data for name, data in events if name == "error")
        return ttfb, total, f"event error: {error.get('code')}", reply
    if names["done"] != 1:
        return ttfb, total, "no done event", reply
    return ttfb, total, "", reply


async def run_level(url: str, token: str, count: int) -> tuple[list, list[str]]:
    headers = {"Authorization": f"Token {token}"}
    limits = httpx.Limits(max_connections=count + 5, max_keepalive_connections=count + 5)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=120, limits=limits
    ) as client:
        sessions = []
        for index in range(count):
            response = await client.post("/api/v1/chat/new", json={"title": f"stream {index}"})
            response.raise_for_status()
            sessions.append(response.json()["session_id"])
        start = time.perf_counter() + 0.5
        results = await asyncio.gather(
            *(one_stream(client, sid, n, start) for n, sid in enumerate(sessions))
        )
    return results, sessions


def stored_once(sessions: list[str], replies: list[str]) -> tuple[int, list[str]]:
    """Sessions holding exactly one user and one assistant message, the assistant's content the
    streamed reply; and a description of each one that does not."""
    from sessions_app.models import Message

    counts = Counter(
        (str(session_id), role)
        for session_id, role in Message.objects.filter(session_id__in=sessions).values_list(
            "session_id", "role"
        )
    )
    contents = dict(
        (str(session_id), content)
        for session_id, content in Message.objects.filter(
            session_id__in=sessions, role="assistant"
        ).values_list("session_id", "content")
    )
    good, bad = 0, []
    for session_id, reply in zip(sessions, replies, strict=True):
        users, assistants = counts[(session_id, "user")], counts[(session_id, "assistant")]
        if users == 1 and assistants == 1 and contents.get(session_id) == reply:
            good += 1
        else:
            bad.append(f"{session_id}: {users} user, {assistants} assistant messages")
    return good, bad


def seed(url: str, token: str) -> None:
    """A few remembered notes so the context pack has something to retrieve."""
    headers = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        session_id = client.post("/api/v1/chat/new", json={"title": "notes"}).json()["session_id"]
        for note in NOTES * 4:
            client.post(
                "/api/v1/chat/messages",
                json={"session_id": session_id, "role": "user", "content": note},
            ).raise_for_status()


def main() -> None:
    args = parse_args()
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}, cores: {os.cpu_count()}", flush=True)
    fake = FakeModel(args.stream_delay, backlog=1024)
    env = node_environment(
        database_url="",
        redis_url="",
        fake_openai_url=fake.base_url,
        LLM_PROVIDER="openai",
        MNEMO_DATA_DIR=str(data_dir),
    )
    env.pop("DATABASE_URL")
    env.pop("REDIS_URL")
    cluster = Cluster(env, data_dir)
    try:
        manage(env, "migrate", "--noinput")
        token = manage(env, "issue_token", "streambench", "--create-user").strip().splitlines()[-1]
        os.environ.update(env)
        import django

        django.setup()
        url = cluster.start_web()
        cluster.wait_ready()
        seed(url, token)
        asyncio.run(run_level(url, token, 5))  # warm the process (imports, pools)
        for count in [int(level) for level in args.levels.split(",") if level]:
            results, sessions = asyncio.run(run_level(url, token, count))
            ttfbs = [ttfb for ttfb, _, _, _ in results if ttfb is not None]
            totals = [total for _, total, error, _ in results if not error]
            errors = Counter(error for _, _, error, _ in results if error)
            good, bad = stored_once(sessions, [reply for *_, reply in results])
            figures = {
                "streams": count,
                "ttfb_p50_ms": round(percentile(ttfbs, 0.50) * 1000),
                "ttfb_p95_ms": round(percentile(ttfbs, 0.95) * 1000),
                "ttfb_max_ms": round(max(ttfbs, default=0) * 1000),
                "done_p50_ms": round(percentile(totals, 0.50) * 1000),
                "done_p95_ms": round(percentile(totals, 0.95) * 1000),
                "errors": sum(errors.values()),
                "error_kinds": dict(errors),
                "stored_exactly_once": good,
                "load_average": [round(value, 2) for value in os.getloadavg()],
            }
            print(json.dumps(figures), flush=True)
            for line in bad[:5]:
                print("   not stored once:", line)
    finally:
        cluster.stop()
        fake.stop()
        stop_embedded(data_dir)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
