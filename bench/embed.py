"""Local embedder throughput, query latency and memory: torch and every ONNX graph side by side.

Prints the CPU's relevant instruction-set flags (AVX2, AVX-512, VNNI), which ONNX graph serves
on this CPU and why (the parity check of `embedder_prepare`, lowest cosine to torch per graph),
then for torch and each ONNX graph (int8 u8s8, int8 u8u8, fp32), each in a fresh process
(`--child RUNNER`) that loads Django and the ASGI app like the web server and uses the
project's settings (EMBEDDING_WORKERS, thread counts), on the same generated texts:

- texts/s at batch sizes 1, 8 and 64 (calls of that many texts, wall clock, CPU ms per text);
- query latency: single short questions, p50/p95;
- peak RSS of the process (Django + app + model), and whether torch got imported.

The runners alternate over `--rounds` rounds and each figure is the best round, so a burst of
load from other processes hurts all alike. The last line is JSON. Figures go to
bench/RESULTS.md with the date, the CPU and the load.
Run: ``.venv/bin/python bench/embed.py [--rounds 2] [--texts 192]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = (
    "the a and to my we I you it was is for on with about at last week tomorrow garden "
    "sourdough Kyoto marathon Postgres index budget meeting dinner recipe flight hotel "
    "train museum doctor appointment review deploy python django café sister daughter "
    "dog walk painting lake weekend birthday cake passport visa rent landlord heating "
    "plan idea remember said told because finally really think maybe"
).split()
QUESTION_STARTS = ["What did I", "When did we", "Where is my", "Who told me about", "How do I"]


def make_texts(count: int, seed: int) -> list[str]:
    """Chat-like texts: mostly messages of 4-60 words, a quarter long turn pairs (~90-220)."""
    rng = random.Random(seed)
    texts = []
    for index in range(count):
        length = rng.randint(90, 220) if index % 4 == 0 else rng.randint(4, 60)
        words = [rng.choice(WORDS) for _ in range(length)]
        texts.append(" ".join(words).capitalize() + ".")
    return texts


def make_queries(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(QUESTION_STARTS)} " + " ".join(rng.choice(WORDS) for _ in range(6)) + "?"
        for _ in range(count)
    ]


RUNNERS = ("torch", "int8", "int8-u8u8", "fp32")


def child(runner: str, texts_count: int, queries_count: int) -> None:
    os.environ["EMBEDDING_PROVIDER"] = "local"
    os.environ["EMBEDDING_BACKEND"] = "torch" if runner == "torch" else "onnx"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
    import django

    django.setup()
    from django.conf import settings

    import memory_site.asgi  # noqa: F401  (the web process's footprint)
    from memory_site.providers import get_embedder
    from memory_site.providers.local_onnx import GRAPHS, OnnxEmbedder, onnx_cache_dir

    if runner == "torch":
        embedder = get_embedder()
    else:
        kind = next(kind for kind in GRAPHS if kind.name == runner)
        embedder = OnnxEmbedder(
            onnx_cache_dir(settings.MNEMO_MODELS_DIR) / kind.filename,
            threads=settings.EMBEDDING_ONNX_THREADS,
            single_threads=(
                settings.EMBEDDING_ONNX_SINGLE_TEXT_THREADS if kind.threaded_single else None
            ),
            workers=settings.EMBEDDING_WORKERS,
            graph=kind.name,
        )
    embedder.embed(["warm up the model", "and its threads"])
    texts = make_texts(texts_count, seed=7)
    queries = make_queries(queries_count, seed=8)
    result = {"backend": getattr(embedder, "backend", "?"), "workers": embedder.workers}
    for batch in (1, 8, 64):
        sample = texts
        started, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(sample), batch):
            embedder.embed(sample[start : start + batch])
        wall = time.perf_counter() - started
        result[f"tps_b{batch}"] = len(sample) / wall
        result[f"cpu_ms_b{batch}"] = (time.process_time() - cpu) / len(sample) * 1000
    latencies = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed([query])
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    result["query_p50_ms"] = statistics.median(latencies)
    result["query_p95_ms"] = latencies[int(len(latencies) * 0.95) - 1]
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["torch_imported"] = "torch" in sys.modules
    print(json.dumps(result))


def run_child(runner: str, args) -> dict:
    completed = subprocess.run(
        [sys.executable, __file__, "--child", runner, "--texts", str(args.texts)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if completed.returncode != 0:
        raise SystemExit(f"{runner} run failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--texts", type=int, default=192)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--child", choices=RUNNERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.texts, args.queries)
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
    import django

    django.setup()
    from django.conf import settings

    from memory_site.providers.local_onnx import (
        cpu_description,
        onnx_cache_dir,
        onnx_manifest_read,
        onnx_model_prepare,
    )

    choice = onnx_model_prepare(
        settings.MNEMO_MODELS_DIR, min_cosine=settings.EMBEDDING_ONNX_PARITY_MIN_COSINE
    )
    manifest = onnx_manifest_read(onnx_cache_dir(settings.MNEMO_MODELS_DIR)) or {}
    cosine = {name: parity["min_cosine"] for name, parity in manifest.get("graphs", {}).items()}
    cosine["torch"] = 1.0
    print(f"CPU flags: {cpu_description()}; {os.cpu_count()} CPUs")
    print(f"load average at start {os.getloadavg()}")
    if choice is None:
        raise SystemExit("the ONNX export failed; nothing to compare")
    print(f"serving graph: {choice.kind.name} ({choice.kind.description}): {choice.reason}")
    runs: dict[str, list[dict]] = {runner: [] for runner in RUNNERS}
    for round_number in range(args.rounds):
        for runner in RUNNERS:
            result = run_child(runner, args)
            runs[runner].append(result)
            print(f"round {round_number + 1} {runner}: {json.dumps(result)}", flush=True)
    best: dict[str, dict] = {}
    for runner, results in runs.items():
        best[runner] = {
            key: (min if key.endswith(("_ms", "_mb")) or key.startswith("cpu") else max)(
                result[key] for result in results
            )
            for key in results[0]
            if isinstance(results[0][key], float)
        }
        best[runner]["torch_imported"] = any(result["torch_imported"] for result in results)
    print("\n" + f"{'':<16}" + "".join(f"{runner:>12}" for runner in RUNNERS))
    rows = ("tps_b1", "tps_b8", "tps_b64", "cpu_ms_b1", "cpu_ms_b64")
    for key in (*rows, "query_p50_ms", "query_p95_ms", "rss_mb"):
        print(f"{key:<16}" + "".join(f"{best[runner][key]:>12.1f}" for runner in RUNNERS))
    print(
        f"{'x torch b1':<16}"
        + "".join(
            f"{best[runner]['tps_b1'] / best['torch']['tps_b1']:>11.2f}x" for runner in RUNNERS
        )
    )
    print(f"{'min cosine':<16}" + "".join(f"{cosine.get(r, float('nan')):>12.5f}" for r in RUNNERS))
    onnx_torch = [runner for runner in RUNNERS[1:] if best[runner]["torch_imported"]]
    print(f"ONNX processes that imported torch: {onnx_torch or 'none'}")
    print(f"load average at end {os.getloadavg()}")
    summary: dict = {
        "cpu_flags": cpu_description(),
        "serving_graph": choice.kind.name,
        "serving_reason": choice.reason,
        "serving_min_cosine": choice.min_cosine,
        "serving_vs_torch_b1": round(best[choice.kind.name]["tps_b1"] / best["torch"]["tps_b1"], 2),
        "min_cosine": cosine,
        "onnx_imported_torch": bool(onnx_torch),
        "load_average": round(os.getloadavg()[0], 2),
    }
    for runner in RUNNERS:
        for key in ("tps_b1", "tps_b8", "tps_b64", "query_p50_ms", "query_p95_ms", "rss_mb"):
            summary[f"{runner}_{key}"] = round(best[runner][key], 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
