"""Offline text functions: time per turn pair (tags + contextual header + facts), p50/p95,
and per session close (summary + title + tags of a ten-turn chat).

The importer needs >1,000 turn pairs/s, so the local text work for one pair must stay well under
a millisecond on an idle core (it was a unit test with a 5 ms ceiling; timing belongs here).
Each round times ``--pairs`` distinct pairs; the word caches are warm after the first round.

Run: ``.venv/bin/python bench/text.py [--rounds 7] [--pairs 300]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mnemo_text.facts import extract_facts  # noqa: E402
from mnemo_text.headers import contextual_header  # noqa: E402
from mnemo_text.keywords import keywords, tags, title  # noqa: E402
from mnemo_text.summaries import summarize  # noqa: E402
from tests.mnemo_text.samples import JAPAN_ASSISTANT, JAPAN_USER  # noqa: E402


def pair_seconds(user_text: str, assistant_text: str) -> float:
    started = time.perf_counter()
    topics = tags([user_text, assistant_text])
    contextual_header(
        user_text=user_text,
        assistant_text=assistant_text,
        topics=topics,
        platform="chatgpt",
        date="2024-02-01",
    )
    extract_facts([("user", user_text), ("assistant", assistant_text)])
    return time.perf_counter() - started


def close_seconds(turns: list[tuple[str, str]]) -> float:
    """What the offline close path computes: digest, title and tag keywords of the user turns."""
    started = time.perf_counter()
    user_texts = [text for role, text in turns if role == "user"]
    summarize(turns, max_chars=800)
    title(user_texts)
    keywords(user_texts, k=16)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds over all pairs")
    parser.add_argument("--pairs", type=int, default=300, help="distinct turn pairs per round")
    arguments = parser.parse_args()
    pairs = [
        (f"{JAPAN_USER} Day {index}: what about Hakone number {index}?", JAPAN_ASSISTANT)
        for index in range(arguments.pairs)
    ]
    timings = sorted(
        pair_seconds(user_text, assistant_text)
        for _ in range(arguments.rounds)
        for user_text, assistant_text in pairs
    )
    p50 = statistics.median(timings) * 1000
    p95 = timings[int(len(timings) * 0.95)] * 1000
    print(
        f"turn pair (tags + header + facts): p50 {p50:.3f} ms, p95 {p95:.3f} ms, "
        f"{1000 / p50:,.0f} pairs/s at p50 over {len(timings)} pairs; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    chats = [
        [
            turn
            for number in range(5)
            for turn in (
                ("user", f"{JAPAN_USER} I live in Utrecht, day {index}, note {number}."),
                ("assistant", JAPAN_ASSISTANT),
            )
        ]
        for index in range(max(arguments.pairs // 10, 5))
    ]
    closes = sorted(close_seconds(chat) for _ in range(arguments.rounds) for chat in chats)
    print(
        f"session close (summary + title + tags, 10 turns): "
        f"p50 {statistics.median(closes) * 1000:.2f} ms, "
        f"p95 {closes[int(len(closes) * 0.95)] * 1000:.2f} ms over {len(closes)} closes; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
