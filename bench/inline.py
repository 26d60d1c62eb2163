"""Inline exchange processing and session close: what they cost, local providers.

1. Request path: the after-message hooks (retrieval items + consolidation check) that run in the
   request after each stored message, timed per assistant reply (the full inline step: header,
   topics, the turn-pair chunk and the reply's own message item inserted into rag_store) and
   per user message (its message item). With MNEMO_EMBED_AFTER_RESPONSE (default) the items'
   one embedder call and the UPDATE of their vectors run after the hook, in the process's
   embedding thread; the bench waits for them before the next message, untimed ("then its
   vectors written"), and shows the process CPU of hook + vectors (all threads), the cost of
   a request wherever it runs. Off, the embedding is in the request. Target: p95 < 40 ms after
   a reply on an idle machine (issue 19).
2. Close task: `session_close_run` on a 50-turn session (50 prompts, 50 replies): digest,
   tags, title, summary embedding, rollups, all in one transaction.

Runs against a throwaway database on the configured server (created, migrated, dropped) with
the offline summarizer and the local all-MiniLM-L6-v2 embedder (warmed up first).
Run: ``.venv/bin/python bench/inline.py [--exchanges 300] [--closes 10] [--torch-threads N]``.
The embedder dominates the request path; on a busy 2-core machine torch's default of one
intra-op thread per core is ~10x slower than one thread, hence ``--torch-threads``; the two
texts after a reply run side by side on one thread each (EMBEDDING_WORKERS).

Measured (2 cores, otherwise idle, load 0.6 at start; commit 39c4066): after an assistant reply
p50 61.4 / p95 71.7 ms (embedding header+prompt alone p50 44.6 / p95 48.9 ms); after a user
message p50 39.8 / p95 44.5 ms; close task of a 50-turn session p50 62.6 / p95 66.4 ms.
Before the one-call embedding (two embeddings one after the other): p50 92.5 / p95 106 ms.
onnx vs torch backend, back to back on the shared VM at load average ~23 (60 exchanges; absolute
figures ~15x an idle machine's): after a reply p50 747 vs 1135 ms, p95 1015 vs 1456 ms; of which
embedding header+prompt p50 238 vs 709 ms (3.0x), p95 330 vs 997 ms; after a user message p50
315 vs 548 ms. Not yet measured idle.
Session 10 (2026-11-27; 2-core AMD EPYC with AVX-512 VNNI, idle, load 1.0; onnx, embedding
after the response): after an assistant reply p50 14.2 / p95 17.2 ms in the request (then its
vectors p95 26.7 ms; CPU of both p95 33.2 ms); embedding header+prompt alone p50 11.3 / p95
12.3 ms; after a user message p50 8.8 / p95 11.8 ms; close task p50 47.7 / p95 51.1 ms.

Where an after-reply's time goes (issue 19; cProfile over 40 replies, onnx, load ~16): the
embedder call ~42% (two texts of ~80-140 tokens, one pass each on the two cores), SQL ~45% (27
statements: message look-ups, two item INSERTs, the neighbours' keyword-context UPDATEs,
entity mentions and cross references, the consolidation check), the rest Python (prepare
~15%, entity extraction's own code). Changes: the items and their entities are now written in
one transaction (one commit instead of three) and the graph quantizes two more projections
(~8% less CPU per token). Before/after run side by side at the same time at load 13-19
(60 exchanges; ~15x an idle machine's figures): after a reply p50 636 -> 570 ms, p95 1131 ->
1104 ms; after a user message p50 308 -> 269 ms. Idle (load 0.6, 300 exchanges): after a reply
p50 41.0 / p95 48.4 ms (68.1 before; the embedding ~19.5 ms of it), after a user message p50
24.5 / p95 28.2 ms. The < 40 ms p95 target needs the embedding off the request path (see the
issue 19 note).

Embedding after the response (issue 19, MNEMO_EMBED_AFTER_RESPONSE=1): this script on main
(f330811, embedding in the request) and on the change, back to back, 300 exchanges, load 2.7-3.3
(not idle; other sessions working): after an assistant reply p50 58.7 -> 24.2 ms, p95 97.1 ->
55.2 ms; after a user message p50 27.3 -> 16.4 ms, p95 52.0 -> 41.2 ms. The vectors follow the
reply by p50 41 / p95 86 ms at that load (a user message's by 15 / 34 ms). CPU per reply
including its vectors (all threads) 48.6 ms p50 both ways; per user message 21.2 -> 21.5 ms.
The embedding thread gives the local embedder one text per call, so it takes one core and
leaves the other to the request: the first version, which spread a reply's texts over both
cores, only went from p95 82.0 to 78.4 ms at load ~2 (p50 55.0 -> 39.1 ms). Idle not measured
(the machine was shared throughout). Recall unchanged: bench/locomo.py --limit 1 (conv-26, 150
questions) gives 0.794 within 2,000 characters and a turn-1 pack rate of 0.944 with the setting
on and off; message_append with hooks p50 71.9 -> 54.3 ms there (load ~6).
Idle (load 0.8, 300 exchanges, final main of round 2 session 3): after an assistant reply p50
16.0 / p95 19.3 ms (48.4 with the embedding in the request), its vectors written p50 37.7 / p95
44.0 ms after; after a user message p50 9.7 / p95 12.0 ms; CPU per reply with its vectors p50
45.6 ms; close task of a 50-turn session p50 63.8 / p95 72.8 ms.
Session 13 (idle, load ~0.5, the int8 graph with every feed-forward output projection int8 and
no SkipLayerNormalization fusion): after an assistant reply p50 13.0 / p95 18.0 ms (embedding
header + prompt alone p50 7.9 / p95 8.9 ms, was ~10); after a user message p50 8.2 / p95
11.8 ms; close task p50 45.9 / p95 54.3 ms.
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
