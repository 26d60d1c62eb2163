"""Entity extraction and the entity leg: write-path overhead and added search latency.

Runs against a throwaway database on the configured server (created, migrated, dropped).

Run: ``.venv/bin/python bench/entity_paths.py [--memories 10000] [--writes 300] [--queries 200]``.

Past figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["MNEMO_ENTITY_TASKS"] = "0"
os.environ["LLM_PROVIDER"] = "local"

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from cpu_clock import CpuClock  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402

import context_app.selectors as selectors  # noqa: E402
from entities_app.models import Entity  # noqa: E402
from entities_app.services.entities import entities_extract  # noqa: E402
from ingestion_app.models import MemoryItem  # noqa: E402
from ingestion_app.services.item_entities import (  # noqa: E402
    bucket_for,
    memory_item_entity_types,
)
from retrieval.search import memory_search  # noqa: E402

PEOPLE = (
    "Ines Marco Priya Tomas Elena Raj Chen Sofia Liam Noah Hannah Omar Fatima Walter Grace "
    "Kenji Lucas Zara Hugo Mateo Clara Victor Nina Aisha Layla Theo Oscar Rosa Ben Emma"
).split()
PETS = "Max Luna Pepper Biscuit Kiwi Mochi Rocket Bubbles Clover Ziggy".split()
PLACES = (
    "Lisbon Porto Berlin Kyoto Osaka Denver Chicago Oslo Munich Cairo Melbourne Toronto "
    "Edinburgh Napa Bali"
).split()
PROJECTS = "Tidewise Nightjar Starfall Helios Apollo Orion Quill Beacon".split()
TEMPLATES = (
    "My sister {p} is getting married in {c} next spring.",
    "I had lunch with {p} and we talked about the {j} roadmap.",
    "My dog {d} hates the rain, so {p} walked him in {c}.",
    "We flew from {c} to see {p} for a long weekend.",
    "{p} asked me to review the {j} launch plan before Friday.",
    "I bought a new lens and tried it on a hike near {c}.",
    "The weather was awful today and I stayed home reading.",
    "{p} and {q} are coming over for dinner on Saturday.",
    "Our cat {d} knocked the plant over again.",
    "I am worried about the budget for the {j} migration.",
)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def unit_vector(rng: np.random.Generator) -> list[float]:
    vector = rng.normal(size=settings.EMBEDDING_DIMENSIONS)
    return (vector / np.linalg.norm(vector)).tolist()


def line_text(rng: random.Random) -> str:
    people = rng.sample(PEOPLE, 2)
    return rng.choice(TEMPLATES).format(
        p=people[0],
        q=people[1],
        d=rng.choice(PETS),
        c=rng.choice(PLACES),
        j=rng.choice(PROJECTS),
    )


def new_item(user, text: str, vector: list[float], index: int) -> MemoryItem:
    return MemoryItem(
        user=user,
        source="chunk",
        content=f"User: {text}",
        embedding=vector,
        metadata={"granularity": "message", "speaker": "user", "role": "user"},
        chunk_id=f"bench-{user.id}-{index}",
        token_count=len(text) // 4,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    vectors = np.random.default_rng(args.seed)
    database = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        print(f"database {database}, load average {os.getloadavg()[0]:.1f} at start")
        user = get_user_model().objects.create_user(username="bench-entities")
        started = time.perf_counter()
        extract_seconds = 0.0
        for first in range(0, args.memories, 1000):
            batch = [
                new_item(user, line_text(rng), unit_vector(vectors), index)
                for index in range(first, min(first + 1000, args.memories))
            ]
            for item in batch:
                item.bucket = bucket_for(
                    item.content, memory_item_entity_types(item)
                )  # as memory_item_build does
            MemoryItem.objects.bulk_create(batch)
            extract_started = time.perf_counter()
            entities_extract(items=batch, use_llm=False)
            extract_seconds += time.perf_counter() - extract_started
        bulk_seconds = time.perf_counter() - started
        print(
            f"bulk: {args.memories} items stored and extracted in {bulk_seconds:.1f} s "
            f"({args.memories / bulk_seconds:,.0f} items/s, storing included; extraction alone "
            f"{extract_seconds:.1f} s, {args.memories / extract_seconds:,.0f} items/s); "
            f"{Entity.objects.filter(user=user).count()} entities"
        )

        clock = CpuClock()
        write_ms, write_cpu_ms = [], []
        for index in range(args.writes):
            item = new_item(user, line_text(rng), unit_vector(vectors), args.memories + index)
            item.bucket = bucket_for(item.content, memory_item_entity_types(item))
            MemoryItem.objects.bulk_create([item])
            started, cpu_started = time.perf_counter(), clock.now_ms()
            entities_extract(items=[item])
            write_ms.append((time.perf_counter() - started) * 1000)
            if cpu_started is not None:
                write_cpu_ms.append(clock.now_ms() - cpu_started)
        print(
            f"request path, entities_extract per message item: p50 {percentile(write_ms, 0.5):.2f}"
            f" ms, p95 {percentile(write_ms, 0.95):.2f} ms over {len(write_ms)}; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        if write_cpu_ms:
            print(
                f"  CPU (this process + database backend, what an idle machine would take): p50 "
                f"{percentile(write_cpu_ms, 0.5):.2f} ms, p95 {percentile(write_cpu_ms, 0.95):.2f} ms"
            )

        questions = [
            f"What did {rng.choice(PEOPLE)} say about the trip to {rng.choice(PLACES)}?"
            for _ in range(args.queries)
        ]
        query_vectors = [unit_vector(vectors) for _ in questions]
        shipped = selectors.ENTITY_WEIGHT
        timings, cpu = {}, {}
        for label, weight in (("without entity leg", 0.0), ("with entity leg", shipped)):
            selectors.ENTITY_WEIGHT = weight
            for question, vector in zip(questions[:10], query_vectors[:10], strict=True):
                memory_search(user=user, query=question, query_embedding=vector)  # warm
            timings[label], cpu[label] = [], []
            for question, vector in zip(questions, query_vectors, strict=True):
                cpu_started = clock.now_ms()
                result = memory_search(user=user, query=question, query_embedding=vector)
                timings[label].append(result.search_ms)
                if cpu_started is not None:
                    cpu[label].append(clock.now_ms() - cpu_started)
        selectors.ENTITY_WEIGHT = shipped
        for label, values in timings.items():
            print(
                f"hybrid search {label} (ENTITY_WEIGHT "
                f"{0.0 if label.startswith('without') else shipped}): p50 "
                f"{percentile(values, 0.5):.1f} ms, p95 {percentile(values, 0.95):.1f} ms"
                + (
                    f"; CPU p50 {percentile(cpu[label], 0.5):.1f} ms, "
                    f"p95 {percentile(cpu[label], 0.95):.1f} ms"
                    if cpu[label]
                    else ""
                )
            )
        print(f"load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores")
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)


if __name__ == "__main__":
    main()
