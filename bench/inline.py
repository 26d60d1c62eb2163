"""Inline exchange processing and session close: what they cost, local providers.

Runs against a throwaway database on the configured server (created, migrated, dropped) with
the offline summarizer and the local all-MiniLM-L6-v2 embedder (warmed up first).
Run: ``.venv/bin/python bench/inline.py [--exchanges 300] [--closes 10] [--torch-threads N]``.
The embedder dominates the request path; on a busy 2-core machine torch's default of one
intra-op thread per core is ~10x slower than one thread, hence ``--torch-threads``; the two
texts after a reply run side by side on one thread each (EMBEDDING_WORKERS).

Past figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["LLM_PROVIDER"] = "local"
os.environ["EMBEDDING_PROVIDER"] = "local"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402

from context_app.models import SessionSummary  # noqa: E402
from context_app.services.summaries import session_close_run  # noqa: E402
from ingestion_app.models import MemoryItem  # noqa: E402
from ingestion_app.services.deferred_embeddings import pending_embeddings_wait  # noqa: E402
from memory_site.providers import get_embedder  # noqa: E402
from sessions_app.models import ChatSession  # noqa: E402
from sessions_app.services.messages import message_create, message_run_hooks  # noqa: E402
from sessions_app.services.sessions import session_open  # noqa: E402

SUBJECTS = [
    "my sourdough starter",
    "the Kyoto itinerary",
    "our Postgres indexes",
    "my marathon plan",
    "the tomato seedlings",
    "a Chopin nocturne",
    "my tax return",
    "the kitchen renovation",
    "my daughter's science project",
    "the React dashboard",
    "a job interview at Globex",
    "the bonsai juniper",
    "my sleep schedule",
    "the Vespa carburettor",
    "our wedding budget",
]
ASKS = [
    "What should I change about {s}?",
    "Can you help me plan {s} for next month?",
    "I am worried about {s}; it has been going badly since March.",
    "Compare two options for {s} and tell me which is cheaper.",
    "Why does {s} keep failing, and how do I debug it?",
]
DETAILS = [
    "I have about two hours each evening.",
    "My budget is tight this year.",
    "Last time I tried the usual advice and it did not work.",
    "My partner prefers the simpler option.",
    "",
]
REPLY_SENTENCES = [
    "Start by measuring where things stand today so you can compare later.",
    "The most common cause is an inconsistent routine rather than the method itself.",
    "A cheaper option is to reuse what you already have and upgrade one part at a time.",
    "Write the plan down as three concrete steps with dates.",
    "If the problem persists after two weeks, change one variable and observe the effect.",
    "Many people underestimate how much time preparation takes.",
    "Keep a short log; patterns become obvious after a few entries.",
    "Ask someone experienced to review your first attempt.",
]


def prompt(rng: random.Random) -> str:
    subject = rng.choice(SUBJECTS)
    return f"{rng.choice(ASKS).format(s=subject)} {rng.choice(DETAILS)}".strip()


def reply(rng: random.Random) -> str:
    return " ".join(rng.sample(REPLY_SENTENCES, rng.randint(3, 6)))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    lower = int(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def line(label: str, timings: list[float]) -> str:
    return (
        f"{label:<34} n={len(timings):<4} p50={percentile(timings, 0.5):7.1f} ms  "
        f"p95={percentile(timings, 0.95):7.1f} ms  mean={statistics.mean(timings):7.1f} ms  "
        f"max={max(timings):7.1f} ms"
    )


class Timings:
    """Wall time of one kind of request, the wait for the vectors left for after it, and the
    process CPU (every thread: the embedder's pool and the embedding thread included) of the
    request plus those vectors: what the request costs the machine, wherever it runs."""

    def __init__(self) -> None:
        self.wall_ms: list[float] = []
        self.after_ms: list[float] = []
        self.cpu_ms: list[float] = []

    def run_hooks(self, message) -> None:
        started, cpu_started = time.perf_counter(), time.process_time()
        message_run_hooks(message=message)
        self.wall_ms.append((time.perf_counter() - started) * 1000)
        # The vectors deferred past the response (MNEMO_EMBED_AFTER_RESPONSE) are written
        # before the next message, as a user's next turn comes seconds later; not timed in.
        started = time.perf_counter()
        assert pending_embeddings_wait(60), "deferred embeddings not done within 60 s"
        self.after_ms.append((time.perf_counter() - started) * 1000)
        self.cpu_ms.append((time.process_time() - cpu_started) * 1000)


def bench_request_path(user, rng: random.Random, exchanges: int) -> None:
    after_user, after_reply = Timings(), Timings()
    session = None
    for index in range(exchanges):
        if index % 25 == 0:  # sessions of 25 exchanges, like a long chat
            session = session_open(user=user, title="bench")
        user_message = message_create(session=session, role="user", content=prompt(rng))
        after_user.run_hooks(user_message)
        assistant_message = message_create(
            session=session, role="assistant", content=reply(rng), model="bench-model"
        )
        after_reply.run_hooks(assistant_message)
    missing = MemoryItem.objects.filter(user=user, embedding__isnull=True).count()
    assert missing == 0, f"{missing} items left without a vector"
    texts = list(
        MemoryItem.objects.filter(user=user, source="chunk")
        .exclude(
            metadata__contains={"granularity": "message"}
        )  # the turn-pair chunks, not per-message items
        .values_list("embedding_text", flat=True)
    )
    assert len(texts) == exchanges, (len(texts), exchanges)
    embedder = get_embedder()
    embed_ms = []
    for text in texts[:100]:
        started = time.perf_counter()
        embedder.embed([text])
        embed_ms.append((time.perf_counter() - started) * 1000)
    print(
        "Request path (after-message hooks, in the request; MNEMO_EMBED_AFTER_RESPONSE="
        f"{int(getattr(settings, 'MNEMO_EMBED_AFTER_RESPONSE', False))}):"
    )
    print("  " + line("after an assistant reply (inline)", after_reply.wall_ms))
    print("  " + line("  then its vectors written (wait)", after_reply.after_ms))
    print("  " + line("  CPU, request + its vectors", after_reply.cpu_ms))
    print("  " + line("embedding header+prompt alone", embed_ms))
    print("  " + line("after a user message", after_user.wall_ms))
    print("  " + line("  then its vectors written (wait)", after_user.after_ms))
    print("  " + line("  CPU, request + its vectors", after_user.cpu_ms))


def bench_close(user, rng: random.Random, closes: int, turns: int) -> None:
    timings = []
    for _ in range(closes):
        session = session_open(user=user)
        for _turn in range(turns):
            message_create(session=session, role="user", content=prompt(rng))
            message_create(session=session, role="assistant", content=reply(rng))
        ChatSession.objects.filter(id=session.id).update(status=ChatSession.Status.CLOSING)
        started = time.perf_counter()
        outcome = session_close_run(session_id=session.id)
        timings.append((time.perf_counter() - started) * 1000)
        assert outcome == "closed", outcome
        assert SessionSummary.objects.filter(session=session).exists()
    print(
        f"Close task ({turns}-turn sessions, {turns * 2} messages, rollups over a growing history):"
    )
    print("  " + line("session_close_run", timings))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=300)
    parser.add_argument("--closes", type=int, default=10)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--torch-threads", type=int, default=0, help="torch intra-op threads (0: torch default)"
    )
    args = parser.parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)

    database = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        rng = random.Random(args.seed)
        get_embedder().embed(["warm up the model"])
        user_model = get_user_model()
        warmup = user_model.objects.create_user(username="bench-warmup")
        bench_request_path(warmup, rng, 10)
        embedder = get_embedder()
        print(
            f"database {database}, CPUs {os.cpu_count()}, embedder "
            f"{getattr(embedder, 'backend', embedder.name)} ({embedder.workers} workers), "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        bench_request_path(
            user_model.objects.create_user(username="bench-inline"), rng, args.exchanges
        )
        bench_close(
            user_model.objects.create_user(username="bench-close"), rng, args.closes, args.turns
        )
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)


if __name__ == "__main__":
    main()
