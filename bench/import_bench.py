"""Chat-export import throughput and peak memory on a generated ChatGPT export.

Generates a ChatGPT ``conversations.json`` of the requested size (default 200 MB) with the
real schema: a tree per conversation with a hidden system root, regenerated answers on side
branches, browsing tool calls and multi-paragraph replies. Then imports it through the real
service (parse, redact, chunk, local headers and tags, store in PostgreSQL, verify) into a
throwaway database, each mode in its own process so peak memory is measured per mode:

- ``no-embed``: parse + chunk + store, embeddings left empty (backfilled later by
  ``manage.py reembed --only-missing``);
- ``embed``: the same with the local all-MiniLM-L6-v2 embedder, on a smaller export
  (``--embed-mb``, default 10 MB) because CPU embedding dominates and scales linearly; the
  chunks are embedded in the import, the passages by the task after it (timed on its own).

Prints turn pairs per second and peak RSS (the whole Python process: Django, parser, model).
Run: ``.venv/bin/python bench/import_bench.py [--size-mb 200] [--embed-mb 10] [--keep FILE]``.

Past figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOPICS = {
    "sourdough baking": (
        "starter hydration levain autolyse crumb proofing banneton scoring flour rye "
        "fermentation oven steam crust gluten dough temperature"
    ),
    "Django migrations": (
        "model migration schema field index constraint queryset transaction postgres "
        "makemigrations squash dependency rollback database column"
    ),
    "trip to Kyoto": (
        "temple shrine ryokan train itinerary kaiseki geisha bamboo garden pass station "
        "arashiyama fushimi gion autumn maple"
    ),
    "marathon training": (
        "pace interval tempo long-run taper recovery shoes cadence heart-rate hydration "
        "carbohydrates injury stretching mileage race"
    ),
    "Dutch VAT filing": (
        "btw quarter invoice deduction freelancer kvk return exemption tax belastingdienst "
        "turnover receipt deadline administration"
    ),
    "kubernetes networking": (
        "pod service ingress cluster node dns network-policy loadbalancer sidecar mesh "
        "namespace port selector kubelet cni"
    ),
    "vegetable gardening": (
        "tomato compost seedling soil raised-bed mulch watering pest harvest trellis "
        "germination sunlight fertilizer pruning"
    ),
    "jazz piano": (
        "voicing chord scale improvisation comping swing rhythm ii-v-i standards "
        "shell bebop pedal modal blues"
    ),
}
FILLER = (
    "the a to of and in that is for it with as on be this you can will your are or from "
    "but not by more when also which if so about into then use make time good well"
).split()
OPENERS = ["How do I", "Can you explain", "What is the best way to", "Why does", "Help me with"]
UNICODE_BITS = ["café", "naïve", "— ", "Zürich", "日本", "ñ", "😊", "€"]


def _sentence(rng: random.Random, words: list[str], length: int) -> str:
    picked = [
        rng.choice(words) if rng.random() < 0.45 else rng.choice(FILLER) for _ in range(length)
    ]
    if rng.random() < 0.1:
        picked.insert(rng.randrange(len(picked)), rng.choice(UNICODE_BITS))
    text = " ".join(picked)
    return text[:1].upper() + text[1:] + "."


def _paragraphs(rng: random.Random, words: list[str], total_words: int) -> str:
    paragraphs, remaining = [], total_words
    while remaining > 0:
        size = min(remaining, rng.randint(30, 90))
        sentences, left = [], size
        while left > 0:
            length = min(left, rng.randint(8, 20))
            sentences.append(_sentence(rng, words, length))
            left -= length
        paragraphs.append(" ".join(sentences))
        remaining -= size
    return "\n\n".join(paragraphs)


def _node(node_id, role, text, parent, t, *, recipient="all", content_type="text", model=None,
          hidden=False, name=None):  # fmt: skip
    metadata = {"timestamp_": "absolute", "message_type": None}
    if model:
        metadata.update(
            {"model_slug": model, "finish_details": {"type": "stop", "stop": "<|im_end|>"}}
        )
    if hidden:
        metadata["is_visually_hidden_from_conversation"] = True
    if content_type == "text":
        content = {"content_type": "text", "parts": [text]}
    elif content_type == "code":
        content = {"content_type": "code", "language": "unknown", "text": text}
    else:
        content = {"content_type": content_type, "result": text, "summary": None, "assets": []}
    return {
        "id": node_id,
        "message": {
            "id": node_id,
            "author": {"role": role, "name": name, "metadata": {}},
            "create_time": t,
            "update_time": None,
            "content": content,
            "status": "finished_successfully",
            "end_turn": role == "assistant" and recipient == "all",
            "weight": 1.0,
            "metadata": metadata,
            "recipient": recipient,
        },
        "parent": parent,
        "children": [],
    }


def make_conversation(rng: random.Random, number: int) -> tuple[dict, int]:
    topic = rng.choice(list(TOPICS))
    words = TOPICS[topic].split()
    conversation_id = str(uuid.UUID(int=rng.getrandbits(128)))
    model = rng.choice(["gpt-4o", "gpt-4", "gpt-4o-mini"])
    t = 1_600_000_000 + number * 3_600 + rng.random()
    mapping: dict[str, dict] = {}
    root = f"{conversation_id}-root"
    mapping[root] = {"id": root, "message": None, "parent": None, "children": []}
    previous = f"{conversation_id}-sys"
    mapping[previous] = _node(previous, "system", "", root, None, hidden=True)
    mapping[root]["children"].append(previous)
    pairs = rng.randint(2, 12)
    for index in range(pairs):
        t += rng.randint(20, 600)
        user_id = f"{conversation_id}-u{index}"
        question = f"{rng.choice(OPENERS)} {topic}? " + _paragraphs(rng, words, rng.randint(15, 90))
        mapping[user_id] = _node(user_id, "user", question, previous, t)
        mapping[previous]["children"].append(user_id)
        parent = user_id
        if rng.random() < 0.08:  # a browsing call, hidden from the displayed text
            call, tool = f"{user_id}-call", f"{user_id}-tool"
            mapping[call] = _node(call, "assistant", f'search("{topic}")', parent, t + 1,
                                  recipient="browser", content_type="code", model=model)  # fmt: skip
            mapping[tool] = _node(tool, "tool", _paragraphs(rng, words, 60), call, t + 2,
                                  content_type="tether_browsing_display", name="browser")  # fmt: skip
            mapping[parent]["children"].append(call)
            mapping[call]["children"].append(tool)
            parent = tool
        answer_id = f"{conversation_id}-a{index}"
        answer = _paragraphs(rng, words, rng.randint(80, 320))
        mapping[answer_id] = _node(answer_id, "assistant", answer, parent, t + 5, model=model)
        if rng.random() < 0.1:  # a regeneration the user did not keep, shown as a sibling
            other = f"{answer_id}-regen"
            mapping[other] = _node(other, "assistant", _paragraphs(rng, words, 100), parent,
                                   t + 9, model=model)  # fmt: skip
            mapping[parent]["children"].append(other)
        mapping[parent]["children"].insert(0, answer_id)
        previous = answer_id
    conversation = {
        "title": f"{topic.title()} #{number}",
        "create_time": 1_600_000_000 + number * 3_600,
        "update_time": t + 5,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": previous,
        "plugin_ids": None,
        "conversation_id": conversation_id,
        "id": conversation_id,
        "default_model_slug": model,
    }
    return conversation, pairs


def generate_export(path: Path, target_bytes: int, seed: int = 7) -> tuple[int, int]:
    """Write conversations until the file reaches ``target_bytes``; returns (conversations,
    displayed turn pairs). Streams to disk: the generator never holds the export."""
    rng = random.Random(seed)
    conversations = pairs = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write("[")
        while out.tell() < target_bytes:
            conversation, count = make_conversation(rng, conversations)
            if conversations:
                out.write(",\n")
            out.write(json.dumps(conversation, ensure_ascii=False))
            conversations += 1
            pairs += count
        out.write("]\n")
    return conversations, pairs


# --------------------------------------------------------------------------------------------


def _cpu_split() -> tuple[float, float]:
    """CPU seconds of (this process, its finished worker processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _proc_cpu(pid: int) -> tuple[int, float]:
    """(parent pid, CPU seconds of the process and of its children it has waited for)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[1]), sum(int(value) for value in fields[11:15]) / ticks


def _server_cpu_reader(connection):
    """CPU seconds used so far by the whole PostgreSQL server behind ``connection`` when it runs
    on this machine (the embedded one): the postmaster, every live child (backends, WAL writer,
    checkpointer, autovacuum) and every child that has exited. A backend's own counter would
    not do: the import gives its connection back (django-q's enqueue closes old connections)
    and goes on in another backend, whose CPU the first one's counter never sees.
    Returns a reader of None when the server is elsewhere."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    try:
        if not Path(f"/proc/{backend}/cmdline").read_bytes().startswith(b"postgres"):
            return lambda: None
        postmaster, _ = _proc_cpu(backend)
    except OSError:
        return lambda: None

    def read() -> float | None:
        _, total = _proc_cpu(postmaster)
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                parent, cpu = _proc_cpu(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue  # exited meanwhile: its CPU is in the postmaster's children figure
            if parent == postmaster:
                total += cpu
        return total

    return read


def run_import(path: Path, *, embed: bool) -> dict:
    """Import ``path`` into a throwaway database (this process only); returns figures."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ["LLM_PROVIDER"] = "local"
    os.environ["EMBEDDING_PROVIDER"] = "local"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from entities_app.models import Entity
    from imports_app.services.entity_backfill import import_file_entities_backfill
    from imports_app.services.jobs import import_job_create_from_paths, import_job_run
    from imports_app.services.passage_vectors import import_job_passage_vectors
    from ingestion_app.models import MemoryItem

    database = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        user = get_user_model().objects.create_user(username="bench-import")
        if embed:
            from memory_site.providers import get_embedder

            get_embedder().embed(["warm up"])  # model load is not import time
        job = import_job_create_from_paths(user=user, paths=[path])
        server_cpu = _server_cpu_reader(connection)
        load_before = os.getloadavg()[0]
        main_before, workers_before = _cpu_split()
        server_before = server_cpu()
        started = time.perf_counter()
        job = import_job_run(job_id=job.id, embed=embed)
        seconds = time.perf_counter() - started
        main_after, workers_after = _cpu_split()
        split = {
            "main": main_after - main_before,
            "workers": workers_after - workers_before,
        }
        if server_before is not None:
            split["postgres"] = server_cpu() - server_before
        cpu_seconds = sum(split.values())
        summary = job.summary
        embedded = MemoryItem.objects.filter(user=user, embedding__isnull=False).count()
        # The entities are extracted after each file by a queued task (not run here: no
        # worker); timed on its own, as a worker would run it.
        cpu_before = sum(_cpu_split()) + (server_cpu() or 0.0)
        backfill_started = time.perf_counter()
        backfilled = sum(
            import_file_entities_backfill(import_file_id=file_id)
            for file_id in job.files.filter(status="imported").values_list("id", flat=True)
        )
        backfill_seconds = time.perf_counter() - backfill_started
        backfill_cpu = sum(_cpu_split()) + (server_cpu() or 0.0) - cpu_before
        entities = Entity.objects.filter(user=user).count()
        # The passages' vectors, embedded after each file by a queued task (issue
        # 19); timed on their own, as a worker would run them.
        vectors = {"passages": 0, "seconds": 0.0, "cpu_seconds": 0.0}
        if embed:
            cpu_before = sum(_cpu_split()) + (server_cpu() or 0.0)
            vectors_started = time.perf_counter()
            vectors["passages"] = import_job_passage_vectors(job=job)
            vectors["seconds"] = time.perf_counter() - vectors_started
            vectors["cpu_seconds"] = sum(_cpu_split()) + (server_cpu() or 0.0) - cpu_before
        missing = MemoryItem.objects.filter(user=user, embedding__isnull=True).count()
    finally:
        connection.creation.destroy_test_db(database, verbosity=0)
    peak_kib = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    pairs = summary.get("turn_pairs", 0)
    return {
        "mode": "embed" if embed else "no-embed",
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "status": job.status,
        "turn_pairs": summary.get("turn_pairs", 0),
        "chunks": summary.get("chunks_generated", 0),
        "embedded": embedded,
        "seconds": round(seconds, 1),
        # files imported vs. the summary and verification that follow
        "import_seconds": summary.get("duration_seconds"),
        "pairs_per_second": round(pairs / seconds, 1) if seconds else 0,
        "cpu_ms_per_pair": round(cpu_seconds * 1000 / pairs, 2) if pairs else 0,
        # where the CPU went: this process, its worker processes, its PostgreSQL backend
        "cpu_ms_per_pair_split": {
            part: round(value * 1000 / pairs, 2) if pairs else 0 for part, value in split.items()
        },
        "peak_rss_mb": round(peak_kib / 1024, 1),
        "verification_ok": summary.get("verification", {}).get("ok"),
        # the entity backfill that follows the import (chunks read, entities found)
        "entity_backfill": {
            "chunks": backfilled,
            "entities": entities,
            "seconds": round(backfill_seconds, 1),
            "chunks_per_second": round(backfilled / backfill_seconds, 1) if backfilled else 0,
            "cpu_ms_per_chunk": round(backfill_cpu * 1000 / backfilled, 2) if backfilled else 0,
        },
        # the passages' vectors after the import (embed mode): passages written, wall seconds,
        # the import's pairs per second counted to the last vector, and the items without one
        "passage_vectors": {
            "passages": vectors["passages"],
            "seconds": round(vectors["seconds"], 1),
            "passages_per_second": round(vectors["passages"] / vectors["seconds"], 1)
            if vectors["passages"]
            else 0,
            "cpu_ms_per_pair": round(vectors["cpu_seconds"] * 1000 / pairs, 2) if pairs else 0,
            "pairs_per_second_to_last_vector": round(pairs / (seconds + vectors["seconds"]), 1)
            if pairs
            else 0,
            "items_without_vector_after": missing,
        },
        # 1-minute load average when the import started and after the backfill
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=200)
    parser.add_argument("--embed-mb", type=float, default=10)
    parser.add_argument("--keep", type=Path, default=None, help="write the big export here")
    parser.add_argument("--run", choices=["embed", "no-embed"], help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_import(args.file, embed=args.run == "embed")))
        return

    workdir = Path(tempfile.mkdtemp(prefix="import-bench-"))
    big = args.keep or workdir / "conversations.json"
    small = workdir / "conversations-small.json"
    started = time.perf_counter()
    conversations, pairs = generate_export(big, int(args.size_mb * 1e6))
    print(
        f"Generated {big.stat().st_size / 1e6:.0f} MB ChatGPT export: {conversations} conversations, "
        f"{pairs} displayed turn pairs ({time.perf_counter() - started:.0f} s)"
    )
    generate_export(small, int(args.embed_mb * 1e6), seed=11)
    runs = [("no-embed", big), ("embed", small)]
    print(f"{'mode':9} {'file MB':>8} {'pairs':>8} {'chunks':>8} {'seconds':>8} "
          f"{'pairs/s':>8} {'CPU ms/pair':>12} {'peak RSS MB':>12} verified")  # fmt: skip
    try:
        for mode, path in runs:
            completed = subprocess.run(
                [sys.executable, __file__, "--run", mode, "--file", str(path)],
                capture_output=True,
                text=True,
                check=False,
            )
            if completed.returncode != 0:
                print(f"{mode}: failed\n{completed.stderr[-3000:]}")
                continue
            result = json.loads(completed.stdout.strip().splitlines()[-1])
            print(
                f"{result['mode']:9} {result['file_mb']:>8} {result['turn_pairs']:>8} "
                f"{result['chunks']:>8} {result['seconds']:>8} {result['pairs_per_second']:>8} "
                f"{result['cpu_ms_per_pair']:>12} {result['peak_rss_mb']:>12} "
                f"{result['verification_ok']}"
            )
            split = result["cpu_ms_per_pair_split"]
            print(
                "          CPU ms/pair by process: "
                + ", ".join(f"{k} {v}" for k, v in split.items())
            )
            backfill = result["entity_backfill"]
            print(
                f"          entity backfill after the import: {backfill['chunks']} chunks, "
                f"{backfill['entities']} entities, {backfill['seconds']} s "
                f"({backfill['chunks_per_second']} chunks/s, {backfill['cpu_ms_per_chunk']} "
                f"CPU ms/chunk); load {result['load_average']}"
            )
            vectors = result["passage_vectors"]
            if result["mode"] == "embed":
                print(
                    f"          passage vectors after the import: {vectors['passages']} "
                    f"passages, {vectors['seconds']} s ({vectors['passages_per_second']}/s, "
                    f"{vectors['cpu_ms_per_pair']} CPU ms/pair); to the last vector "
                    f"{vectors['pairs_per_second_to_last_vector']} pairs/s; items without a "
                    f"vector after: {vectors['items_without_vector_after']}"
                )
    finally:
        for path in (small, big):
            if path != args.keep:
                path.unlink(missing_ok=True)
        if not args.keep:
            workdir.rmdir()
    print(
        "CPU ms/pair counts this process, its worker processes and the PostgreSQL server;\n"
        "on an otherwise idle machine with N cores, pairs/s is bounded by N * 1000 / that.\n"
        f"Load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.\n"
        "Targets: >= 1,000 pairs/s without embeddings, peak memory < 500 MB (no-embed mode)."
    )


if __name__ == "__main__":
    main()
