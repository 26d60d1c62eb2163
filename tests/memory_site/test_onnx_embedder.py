"""The int8 ONNX local embedder: same vectors as torch, concurrency, fallback, no torch at run time.

Uses the graph cached under var/models (exported once by `make test`'s `embedder_prepare`, or by
the first test that needs it)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memory_site.providers import _local_embedder, get_embedder
from memory_site.providers.local import LocalEmbedder
from memory_site.providers.local_onnx import (
    MANIFEST_FILENAME,
    OnnxEmbedder,
    onnx_cache_dir,
    source_fingerprint,
)

ROOT = Path(__file__).resolve().parents[2]

# Not the export's parity sentences: what users store and search for.
TEXTS = [
    "yes",
    "Good morning!",
    "What did I say about my grandmother's recipe for plum dumplings?",
    "I moved to Lisbon in March and I'm still looking for a climbing gym near Alfama.",
    "Meeting with the accountant moved to Wednesday; bring the 2025 receipts folder.",
    "Evan: I finally finished the watercolor of the lighthouse.\n"
    "Sam: Post it! You've been working on that for weeks.",
    "Wie lange dauert die Zugfahrt von München nach Wien?",
    "The HNSW index uses vector_cosine_ops; ef_search 40 was too low for recall.",
    "My son is allergic to peanuts, so the birthday party menu has to be nut-free. " * 12,
]


@pytest.fixture
def onnx_backend(settings):
    settings.EMBEDDING_PROVIDER = "local"
    settings.EMBEDDING_BACKEND = "onnx"
    _local_embedder.cache_clear()
    yield
    _local_embedder.cache_clear()


def cosines(left, right) -> np.ndarray:
    return (np.array(left) * np.array(right)).sum(axis=1)


def test_onnx_is_the_default_and_matches_the_torch_vectors(onnx_backend):
    embedder = get_embedder()
    assert isinstance(embedder, OnnxEmbedder)
    vectors = embedder.embed(TEXTS)
    torch_vectors = LocalEmbedder().embed(TEXTS)
    assert np.array(vectors).shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert cosines(vectors, torch_vectors).min() >= 0.99
    # Search keeps working: the paraphrase is nearer than an unrelated text, as with torch.
    query = embedder.embed(["Where did I move to in the spring?"])[0]
    assert np.dot(query, vectors[3]) > np.dot(query, vectors[4]) + 0.1


def test_onnx_keeps_each_text_with_its_vector_across_passes_and_threads(onnx_backend):
    embedder = get_embedder()
    texts = TEXTS * 3  # several passes over two worker threads
    together = embedder.embed(texts)
    alone = [embedder.embed([text])[0] for text in TEXTS]
    # A text's vector does not depend on the texts it is embedded with.
    assert np.allclose(together, alone * 3, atol=1e-6)
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda text: embedder.embed([text, "ok"]), TEXTS * 4))
    firsts = np.array([vectors[0] for vectors in results])
    assert np.allclose(firsts, alone * 4, atol=1e-6)


def test_failed_parity_check_falls_back_to_torch_with_a_clear_message(
    onnx_backend, settings, tmp_path, caplog
):
    settings.DATA_DIR = tmp_path
    cache_dir = onnx_cache_dir(tmp_path)
    cache_dir.mkdir(parents=True)
    parity = {"passed": False, "threshold": 0.99, "min_cosine": 0.97, "sentences": 29}
    manifest = {"source": source_fingerprint(), "parity": parity}
    (cache_dir / MANIFEST_FILENAME).write_text(json.dumps(manifest))
    with caplog.at_level(logging.ERROR):
        embedder = get_embedder()
    assert isinstance(embedder, LocalEmbedder)
    assert "failed its parity check" in caplog.text and "0.9700" in caplog.text
    assert len(embedder.embed(["still works"])[0]) == 384


def test_torch_backend_can_be_chosen(settings):
    settings.EMBEDDING_PROVIDER = "local"
    settings.EMBEDDING_BACKEND = "torch"
    _local_embedder.cache_clear()
    try:
        assert isinstance(get_embedder(), LocalEmbedder)
    finally:
        _local_embedder.cache_clear()


RUNTIME_PROBE = """
import sys
import django
django.setup()
from django.urls import get_resolver
import memory_site.asgi, django_q.cluster
import sessions_app.tasks, ingestion_app.tasks, context_app.tasks
get_resolver().url_patterns
from memory_site.providers import get_embedder
vectors = get_embedder().embed(["the web server embeds a query", "and a reply"])
assert len(vectors[0]) == 384, len(vectors[0])
print(type(get_embedder()).__name__)
print(sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules))
"""


def run_probe(**environ) -> subprocess.CompletedProcess:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_site.settings", **environ}
    env.pop("MNEMO_WARM_EMBEDDER", None)
    return subprocess.run(
        [sys.executable, "-c", RUNTIME_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_web_and_worker_code_with_onnx_import_neither_torch_nor_sentence_transformers():
    completed = run_probe(EMBEDDING_PROVIDER="local", EMBEDDING_BACKEND="onnx")
    assert completed.returncode == 0, completed.stderr[-2000:]
    name, loaded = completed.stdout.strip().splitlines()[-2:]
    assert name == "OnnxEmbedder"
    assert loaded == "[]"


def test_unknown_backend_stops_start_up():
    completed = run_probe(EMBEDDING_BACKEND="tensorflow")
    assert completed.returncode != 0
    assert "EMBEDDING_BACKEND must be onnx or torch" in completed.stderr


def test_outlier_split_computes_what_the_layer_it_replaces_computes():
    """The export routes a projection's outlier input channels through an fp32 side product so
    int8 fits the rest; before quantization the split layer must be the same function."""
    torch = pytest.importorskip("torch")
    from memory_site.providers.onnx_export import OutlierSplitLinear

    torch.manual_seed(3)
    linear = torch.nn.Linear(32, 8)
    hidden = torch.randn(2, 5, 32)
    hidden[..., 7] *= 40  # an outlier neuron, as GELU's in layers 0-3
    split = OutlierSplitLinear(linear, [7, 19])
    with torch.no_grad():
        assert torch.allclose(split(hidden), linear(hidden), atol=1e-4)
        assert split.side.weight.shape == (8, 2)
        # The main product no longer sees the outliers: its input there is zero.
        assert torch.equal((hidden * split.keep)[..., [7, 19]], torch.zeros(2, 5, 2))
