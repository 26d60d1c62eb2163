"""Commit to Memory latency: one commit of 50 new messages, local providers, p50/p95.

Runs against a throwaway database on the configured server (created, migrated, dropped), with
the offline extractor and the local all-MiniLM-L6-v2 embedder. Each run commits a fresh chat of
50 messages (25 user turns with 1-3 facts each, 25 assistant replies) for:
- "empty store": a user with no facts yet;
- "warm store": a user who already has the facts of every earlier run (a few hundred), so the
  duplicate and update checks run against a realistic neighbourhood.

Run: ``.venv/bin/python bench/commit.py [--runs 30]``.
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

from ingestion_app.models import MemoryItem  # noqa: E402
from ingestion_app.services.commit import memory_commit  # noqa: E402
from memory_site.providers import get_embedder  # noqa: E402
from sessions_app.services.messages import message_create  # noqa: E402
from sessions_app.services.sessions import session_open  # noqa: E402

CITIES = ["Lisbon", "Berlin", "Paris", "Oslo", "Kyoto", "Austin", "Porto", "Vienna", "Quito"]
EMPLOYERS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries", "Wayne Corp"]
JOBS = ["designer", "nurse", "pilot", "teacher", "data engineer", "chef", "architect"]
HOBBIES = ["the cello", "chess", "tennis", "the guitar", "bridge", "volleyball", "the piano"]
LIKES = ["hiking", "sushi", "jazz", "gardening", "sci-fi novels", "board games", "cycling"]
RELATIVES = ["sister", "brother", "cousin", "aunt", "uncle", "daughter", "son"]
NAMES = ["Anna", "Tom", "Maya", "Luis", "Ines", "Kofi", "Yuki", "Omar", "Lena", "Raj"]
PETS = ["cat", "dog", "parrot", "rabbit", "tortoise"]
REPLIES = [
    "That sounds great, tell me more.",
    "Thanks for sharing! How long has that been the case?",
    "Interesting. Would you like some suggestions related to that?",
    "Got it. Anything else on your mind today?",
    "Nice! I can help you plan around that if you want.",
]


def user_turn(rng: random.Random) -> str:
    templates = [
        lambda: f"I live in {rng.choice(CITIES)}.",
        lambda: f"I moved to {rng.choice(CITIES)} last month.",
        lambda: f"I work at {rng.choice(EMPLOYERS)} as a {rng.choice(JOBS)}.",
        lambda: f"I play {rng.choice(HOBBIES)} every weekend.",
        lambda: f"I really like {rng.choice(LIKES)}.",
        lambda: f"My {rng.choice(RELATIVES)} {rng.choice(NAMES)} is a {rng.choice(JOBS)}.",
        lambda: f"I have a {rng.choice(PETS)} named {rng.choice(NAMES)}.",
        lambda: f"Can you recommend a good book about {rng.choice(LIKES)}?",
        lambda: "Hi! How are you doing today?",
    ]
    return " ".join(rng.choice(templates)() for _ in range(rng.randint(1, 3)))


def chat_with_new_messages(user, rng: random.Random, count: int = 50):
    session = session_open(user=user, title="bench")
    for index in range(count):
        if index % 2 == 0:
            message_create(session=session, role="user", content=user_turn(rng))
        else:
            message_create(session=session, role="assistant", content=rng.choice(REPLIES))
    return session


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    lower = int(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def measure(label: str, users, rng: random.Random, runs: int) -> None:
    timings, stored, updated, skipped = [], [], [], []
    for run in range(runs):
        user = users(run)
        session = chat_with_new_messages(user, rng)
        started = time.perf_counter()
        result = memory_commit(user=user, chat_session_id=session.id)
        timings.append((time.perf_counter() - started) * 1000)
        stored.append(result.facts_committed)
        updated.append(result.facts_updated)
        skipped.append(result.duplicates_skipped)
        assert result.messages_read == 50
    facts_in_store = MemoryItem.objects.filter(user=users(runs - 1), source="fact").count()
    print(
        f"{label:<12} runs={runs:<3} p50={percentile(timings, 0.5):7.1f} ms  "
        f"p95={percentile(timings, 0.95):7.1f} ms  mean={statistics.mean(timings):7.1f} ms  "
        f"max={max(timings):7.1f} ms  | per commit: {statistics.mean(stored):.1f} added, "
        f"{statistics.mean(updated):.1f} updated, {statistics.mean(skipped):.1f} duplicates "
        f"(store ends with {facts_in_store} facts)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    settings.MNEMO_AFTER_MESSAGE_HOOKS = []  # message setup is not what is measured
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        rng = random.Random(args.seed)
        user_model = get_user_model()
        warmup_user = user_model.objects.create_user(username="bench-warmup")
        memory_commit(user=warmup_user, chat_session_id=chat_with_new_messages(warmup_user, rng).id)

        print(f"Commit to Memory, 50 new messages per commit, local providers, database {database}")
        fresh = [
            user_model.objects.create_user(username=f"bench-fresh-{i}") for i in range(args.runs)
        ]
        measure("empty store", lambda run: fresh[run], rng, args.runs)
        regular = user_model.objects.create_user(username="bench-regular")
        measure("warm store", lambda run: regular, rng, args.runs)
        # For reading the figures on a busy machine: the embedder's share of a commit.
        facts = list(
            MemoryItem.objects.filter(source="fact").values_list("content", flat=True)[:20]
        )
        embed_ms = []
        for _ in range(args.runs):
            started = time.perf_counter()
            get_embedder().embed(facts)
            embed_ms.append((time.perf_counter() - started) * 1000)
        print(
            f"{'embed only':<12} runs={args.runs:<3} p50={percentile(embed_ms, 0.5):7.1f} ms  "
            f"p95={percentile(embed_ms, 0.95):7.1f} ms  (one batch of {len(facts)} facts)"
        )
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)


if __name__ == "__main__":
    main()
