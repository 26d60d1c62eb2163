"""Latency of `prepare_context` with 100,000 stored memories over 1,000 users.

Run: ``.venv/bin/python bench/context_pack.py [--users 1000] [--per-user 100] [--calls 500]``.

The data lives in its own database on the embedded server (``bench_mnemo_context``; kept
between runs, ``--rebuild`` starts over). Each user gets rollups, ten closed sessions with
summaries and tags (the topic inventory), an open session with five user turns, and
``--per-user`` memories whose embeddings are drawn around a few topic centroids, so searches
find neighbours above the similarity threshold as real ones do.

Reported separately:

- the database part: `prepare_context` with the query embedding precomputed (every call
  rebuilds: cadence and cooldown are set to refresh on each turn), including the settings read,
  topic inference, topic summary, rollups, the hybrid memory search, assembly and the
  injection-log write;
- the query embedding with the local all-MiniLM-L6-v2 model;
- a smaller end-to-end run with the real embedder.

Target: p95 of the database part under 25 ms on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

BENCH_DB = "bench_mnemo_context"
DIMENSIONS = 384
TOPICS = [
    ("sourdough-baking", "sourdough starter hydration loaf crumb oven bake flour rye"),
    ("japan-travel", "japan kyoto tokyo rail pass hotel temple ramen itinerary"),
    ("marathon-training", "marathon running pace tempo long run shoes race recovery"),
    ("home-network", "router wifi mesh vlan firewall dns ethernet switch nas"),
    ("tax-return", "tax return deduction receipts income filing refund accountant"),
    ("garden-tomatoes", "tomato garden seedlings compost watering blight trellis soil"),
    ("python-asyncio", "python asyncio event loop coroutine task await queue timeout"),
    ("wedding-planning", "wedding venue guests catering dress invitations budget music"),
    ("piano-practice", "piano scales chords sight reading practice metronome recital"),
    ("car-maintenance", "car oil change tires brakes battery service mileage engine"),
]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--e2e-calls", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rebuild", action="store_true", help="drop and regenerate the data")
    return parser.parse_args()


def use_bench_database(rebuild: bool) -> None:
    """Point the connection at the bench database (created and migrated when missing)."""
    connection.settings_dict["TEST"]["NAME"] = BENCH_DB
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=not rebuild)


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def generate(args, rng: np.random.Generator, centroids: np.ndarray) -> None:
    from context_app.models import SessionSummary, SessionTag, UserChatSummary
    from ingestion_app.models import MemoryItem
    from sessions_app.models import ChatSession, Message

    user_model = get_user_model()
    now = timezone.now()
    started = time.perf_counter()
    print(f"generating {args.users} users x {args.per_user} memories ...", flush=True)
    users = user_model.objects.bulk_create(
        [user_model(username=f"bench{index:05d}", password="!") for index in range(args.users)],
        batch_size=1000,
    )
    sessions, summaries, tags, rollups, messages = [], [], [], [], []
    for user in users:
        favourite = rng.choice(len(TOPICS), size=3, replace=False)
        for index in range(10):
            topic = TOPICS[favourite[index % 3]]
            when = now - timedelta(days=int(rng.integers(1, 400)))
            session = ChatSession(
                user=user, status="closed", opened_at=when, closed_at=when, last_activity_at=when
            )
            sessions.append(session)
            words = topic[1].split()
            summaries.append(
                SessionSummary(
                    session=session,
                    user=user,
                    summary=f"- The user discussed {words[0]} and {words[1]}.\n"
                    f"- They asked about {words[2]} with {words[3]}.",
                    created_at=when,
                )
            )
            tags.append(SessionTag(session=session, user=user, tag=topic[0], confidence=0.8))
        topic = TOPICS[favourite[0]]
        open_session = ChatSession(user=user, status="open", title="bench")
        sessions.append(open_session)
        for turn in range(5):
            text = f"Question {turn} about {' '.join(rng.choice(topic[1].split(), size=4))}?"
            messages.append(
                Message(
                    session=open_session,
                    user=user,
                    role="user",
                    content=text,
                    content_sanitized=text,
                )
            )
        rollups.append(
            UserChatSummary(
                user=user,
                kind="recent",
                summary="\n".join(f"- Recent point {i} about {topic[1]}." for i in range(12)),
            )
        )
        rollups.append(
            UserChatSummary(
                user=user,
                kind="history",
                summary="\n".join(
                    f"- Older point {i} about {TOPICS[favourite[1]][1]}." for i in range(12)
                ),
            )
        )
    ChatSession.objects.bulk_create(sessions, batch_size=2000)
    SessionSummary.objects.bulk_create(summaries, batch_size=2000)
    SessionTag.objects.bulk_create(tags, batch_size=2000)
    Message.objects.bulk_create(messages, batch_size=2000)
    UserChatSummary.objects.bulk_create(rollups, batch_size=2000)
    print(f"  users, sessions, summaries, tags: {time.perf_counter() - started:.1f} s", flush=True)

    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS rag_embedding_hnsw")
    # Every concrete column of the model (defaults for the ones not set here), so the bench
    # keeps working when the rag_store grows a column.
    fields = [
        field
        for field in MemoryItem._meta.concrete_fields
        if not field.primary_key and not field.generated
    ]
    columns = ", ".join(field.column for field in fields)
    attnames = {field.attname for field in fields}

    def row(values: dict) -> tuple:
        out = []
        for field in fields:
            value = values[field.attname] if field.attname in values else field.get_default()
            out.append(field.get_db_prep_save(value, connection))
        return tuple(out)

    sources = ["chunk"] * 6 + ["fact"] * 3 + ["summary"]
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(f"COPY rag_store ({columns}) FROM STDIN") as copy:
            for user in users:
                favourite = rng.choice(len(TOPICS), size=3, replace=False)
                for index in range(args.per_user):
                    topic_index = (
                        favourite[index % 3] if rng.random() < 0.8 else rng.integers(len(TOPICS))
                    )
                    name, words = TOPICS[topic_index]
                    picked = " ".join(rng.choice(words.split(), size=5))
                    content = f"Note {index}: the user talked about {picked} and what to do next."
                    vector = unit(centroids[topic_index] + rng.normal(0, 0.045, DIMENSIONS))
                    when = now - timedelta(days=float(rng.uniform(0, 500)))
                    values = {
                        "user_id": user.pk,
                        "source": sources[index % len(sources)],
                        "content": content,
                        "embedding_text": content,
                        "embedding": vector.tolist(),
                        "topics": [name],
                        "token_count": len(content.split()) + 4,
                        "occurred_at": when,
                        "created_at": when,
                        "updated_at": when,
                    }
                    copy.write_row(row({k: v for k, v in values.items() if k in attnames}))
        print(
            f"  {args.users * args.per_user:,} memories copied: {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        cursor.execute("SET maintenance_work_mem = '512MB'")
        cursor.execute(
            "CREATE INDEX rag_embedding_hnsw ON rag_store USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 128)"
        )
        cursor.execute("ANALYZE")
    print(f"  HNSW index rebuilt, analyzed: {time.perf_counter() - started:.1f} s", flush=True)


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    return (
        f"p50 {pick(0.5):6.2f} ms   p95 {pick(0.95):6.2f} ms   p99 {pick(0.99):6.2f} ms   "
        f"mean {statistics.fmean(ordered):6.2f} ms   (n={len(ordered)})"
    )


def main() -> None:
    args = parse_args()
    rng = np.random.default_rng(args.seed)
    centroids = np.stack([unit(rng.normal(size=DIMENSIONS)) for _ in TOPICS])
    use_bench_database(args.rebuild)

    from context_app.models import ContextSettings
    from context_app.services import context_pack
    from context_app.services.context_pack import build as context_pack_build
    from ingestion_app.models import MemoryItem
    from memory_site.providers import get_embedder
    from sessions_app.models import ChatSession, Message

    if MemoryItem.objects.count() < args.users * args.per_user:
        generate(args, rng, centroids)
    print(
        f"data: {get_user_model().objects.count():,} users, {MemoryItem.objects.count():,} memories, "
        f"PostgreSQL {connection.cursor().connection.info.server_version}",
        flush=True,
    )

    row = ContextSettings.load()
    row.refresh_every_turns = 1
    row.refresh_cooldown_seconds = 0
    row.verbose_logging = False
    row.save()

    # Forget the packs of earlier runs: every measured call must build, not reuse.
    ChatSession.objects.filter(status="open", title="bench").update(metadata={})
    sessions = list(ChatSession.objects.filter(status="open", title="bench").select_related("user"))
    random.Random(args.seed).shuffle(sessions)
    last_messages = {
        message.session_id: message
        for message in Message.objects.filter(session__in=sessions, role="user").order_by("id")
    }

    # Query embeddings are drawn like the stored ones, so similarities are realistic.
    query_vectors: dict[str, list[float]] = {}

    def precomputed(query: str) -> list[float]:
        return query_vectors[query]

    def query_for(session) -> str:
        message = last_messages[session.id]
        if message.content_sanitized not in query_vectors:
            words = set(message.content_sanitized.lower().strip("?").split())
            best = max(range(len(TOPICS)), key=lambda i: len(words & set(TOPICS[i][1].split())))
            query_vectors[message.content_sanitized] = unit(
                centroids[best] + rng.normal(0, 0.045, DIMENSIONS)
            ).tolist()
        return message.content_sanitized

    real_embed = context_pack_build._embed_query
    context_pack_build._embed_query = precomputed
    # The hybrid memory search is timed on its own too: it is retrieval's part of the budget.
    real_search = context_pack_build.memory_search
    search_times: list[float] = []  # within the current call
    search_per_call: list[float] = []

    def timed_search(**kwargs):
        started = time.perf_counter()
        try:
            return real_search(**kwargs)
        finally:
            search_times.append((time.perf_counter() - started) * 1000)

    context_pack_build.memory_search = timed_search
    db_times: list[float] = []
    rest: list[float] = []
    statuses: dict[str, int] = {}
    memories_carried: list[int] = []
    chars: list[int] = []
    for index, session in enumerate(sessions[: args.calls + 20]):
        query = query_for(session)
        started = time.perf_counter()
        pack = context_pack.prepare_context(
            session=session,
            user_message=last_messages[session.id],
            query=query,
            conversation_tokens=200,
        )
        elapsed = (time.perf_counter() - started) * 1000
        searched = sum(search_times)
        search_times.clear()
        if index < 20:
            continue  # warm-up: connections, caches, plans
        db_times.append(elapsed)
        rest.append(elapsed - searched)
        if searched:
            search_per_call.append(searched)
        statuses[f"{pack.status}:{pack.reason}"] = (
            statuses.get(f"{pack.status}:{pack.reason}", 0) + 1
        )
        memories_carried.append(len(pack.memories))
        chars.append(len(pack.text))
    context_pack_build._embed_query = real_embed
    context_pack_build.memory_search = real_search

    load = os.getloadavg()
    print(
        f"\nload average during the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} ({os.cpu_count()} CPUs)"
    )
    print("\nprepare_context, database part (query embedding precomputed):")
    print("  " + percentiles(db_times))
    print("  of which memory_search (hybrid retrieval):")
    print("  " + percentiles(search_per_call))
    print("  the rest (settings, turn state, topic, rollups, assembly, injection log):")
    print("  " + percentiles(rest))
    print(f"  outcomes: {statuses}")
    print(
        f"  pack chars: mean {statistics.fmean(chars):.0f}, max {max(chars)};"
        f" memories per pack: mean {statistics.fmean(memories_carried):.1f}"
    )

    embedder = get_embedder()
    embedder.embed(["warm up the model"])
    embed_times = []
    for session in sessions[: args.e2e_calls]:
        text = last_messages[session.id].content_sanitized
        started = time.perf_counter()
        embedder.embed([text])
        embed_times.append((time.perf_counter() - started) * 1000)
    print(f"\nquery embedding ({settings.EMBEDDING_MODEL}, local CPU):")
    print("  " + percentiles(embed_times))

    e2e_times = []
    with_memories = 0
    for session in sessions[args.calls + 20 : args.calls + 20 + args.e2e_calls]:
        started = time.perf_counter()
        pack = context_pack.prepare_context(
            session=session, user_message=last_messages[session.id], conversation_tokens=200
        )
        e2e_times.append((time.perf_counter() - started) * 1000)
        with_memories += any(s.name == "Relevant memories" for s in pack.segments)
    if e2e_times:
        print("\nprepare_context end to end (real embedder, overlapped with the database reads):")
        print("  " + percentiles(e2e_times))
        print(
            f"  packs with a memories segment: {with_memories}/{len(e2e_times)} (real query "
            "vectors do not match the synthetic stored ones: this run times the path only)"
        )

    target = sorted(db_times)[int(round(0.95 * (len(db_times) - 1)))]
    print(
        f"\ntarget p95 < 25 ms for the database part: {'met' if target < 25 else 'NOT met'} ({target:.2f} ms)"
    )


if __name__ == "__main__":
    main()
