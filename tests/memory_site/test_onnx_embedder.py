"""The ONNX local embedder: same vectors as torch on any CPU, the int8 -> fp32 fallback forced
through the parity setting (so every machine runs both branches), concurrency, no torch at run
time.

Uses the graphs cached under var/models (exported once by `make test`'s `embedder_prepare`, or
by the first test that needs it)."""

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
    GRAPHS,
    REFERENCE_FILENAME,
    TOKENIZER_FILENAME,
    OnnxEmbedder,
    cpu_flags,
    graph_choose,
    onnx_cache_dir,
    onnx_manifest_read,
    onnx_model_prepare,
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


@pytest.fixture
def torch_not_installed(monkeypatch):
    """This process sees the install a runtime-only `pip install .` makes: no torch."""
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "torch" else real_find_spec(name, *args),
    )


def cosines(left, right) -> np.ndarray:
    return (np.array(left) * np.array(right)).sum(axis=1)


def test_an_onnx_graph_is_the_default_and_matches_the_torch_vectors(onnx_backend):
    embedder = get_embedder()
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.graph in {kind.name for kind in GRAPHS}
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


def test_int8_serves_when_it_holds_the_parity_setting(onnx_backend, settings, caplog):
    settings.EMBEDDING_ONNX_PARITY_MIN_COSINE = 0.5  # any int8 graph holds this
    with caplog.at_level(logging.INFO, logger="memory_site.providers.local_onnx"):
        embedder = get_embedder()
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.graph == "int8"
    assert embedder.model_path.name == "model_int8.onnx"
    assert "ONNX int8 graph serves on this CPU" in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_int8_refused_serves_the_fp32_onnx_graph_never_torch(onnx_backend, settings, caplog):
    """Raised past what int8 reaches anywhere, the setting makes every CPU take the branch an
    AVX2-only CPU takes when its int8 kernels miss: the unquantized ONNX graph, no torch."""
    settings.EMBEDDING_ONNX_PARITY_MIN_COSINE = 0.9999
    with caplog.at_level(logging.INFO, logger="memory_site.providers.local_onnx"):
        embedder = get_embedder()
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.graph == "fp32"
    line = next(r.getMessage() for r in caplog.records if "graph serves" in r.getMessage())
    assert "ONNX fp32 graph serves" in line and "refused: int8 0.9" in line
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    # The unquantized graph is the model itself: torch's vectors to float precision.
    assert cosines(embedder.embed(TEXTS), LocalEmbedder().embed(TEXTS)).min() >= 0.9999


def test_unsigned_weight_graph_matches_torch_with_saturation_free_kernels(onnx_backend, settings):
    """The u8u8 graph's integer products never saturate, so its vectors are the same on every
    x86-64 CPU: what it scores here it scores on an AVX2-only one."""
    choice = onnx_model_prepare(settings.MNEMO_MODELS_DIR)
    embedder = OnnxEmbedder(choice.path.parent / "model_int8_u8u8.onnx", graph="int8-u8u8")
    assert cosines(embedder.embed(TEXTS), LocalEmbedder().embed(TEXTS)).min() >= 0.99


def parities(**lowest: float) -> dict:
    return {"graphs": {name: {"min_cosine": value} for name, value in lowest.items()}}


def test_the_first_graph_holding_parity_serves_in_speed_order(tmp_path):
    manifest = parities(**{"int8": 0.9891, "int8-u8u8": 0.9943, "fp32": 1.0})
    chosen = graph_choose(manifest, tmp_path, min_cosine=0.99)
    assert chosen.kind.name == "int8-u8u8"
    assert chosen.path == tmp_path / "model_int8_u8u8.onnx"
    assert "refused: int8 0.9891 < 0.9900" in chosen.reason
    assert graph_choose(manifest, tmp_path, min_cosine=0.98).kind.name == "int8"
    assert graph_choose(manifest, tmp_path, min_cosine=0.995).kind.name == "fp32"
    # Even an fp32 graph under the bar serves (it is the model); torch never does.
    last = graph_choose(parities(int8=0.9, fp32=0.9998), tmp_path, min_cosine=0.9999)
    assert last.kind.name == "fp32" and "last resort" in last.reason


def test_a_cache_measured_on_another_cpu_is_measured_again(
    onnx_backend, settings, tmp_path, caplog
):
    """A cache moved to another machine (a volume, an image built elsewhere) is not trusted
    there, since int8 parity depends on the CPU's kernels, but neither is it exported again:
    it is measured against the stored torch vectors, with ONNX Runtime alone."""
    onnx_model_prepare(settings.MNEMO_MODELS_DIR)
    source = onnx_cache_dir(settings.MNEMO_MODELS_DIR)
    moved = onnx_cache_dir(tmp_path)
    moved.mkdir(parents=True)
    for kind in GRAPHS:
        (moved / kind.filename).symlink_to(source / kind.filename)
    for name in (REFERENCE_FILENAME, TOKENIZER_FILENAME):
        (moved / name).symlink_to(source / name)
    manifest = onnx_manifest_read(source)
    assert manifest["measured_on"] == list(cpu_flags())
    elsewhere = {
        **manifest,
        "measured_on": ["avx2"] if list(cpu_flags()) != ["avx2"] else [],
        "graphs": {
            name: {**parity, "min_cosine": 0.5} for name, parity in manifest["graphs"].items()
        },
    }
    (moved / "manifest.json").write_text(json.dumps(elsewhere))
    assert onnx_manifest_read(moved) == elsewhere
    with caplog.at_level(logging.INFO, logger="memory_site.providers.local_onnx"):
        choice = onnx_model_prepare(tmp_path)
    assert "measured on this CPU" in caplog.text
    assert "exporting" not in caplog.text
    rewritten = onnx_manifest_read(moved)
    assert rewritten["measured_on"] == list(cpu_flags())
    for name, parity in manifest["graphs"].items():
        assert rewritten["graphs"][name]["min_cosine"] == pytest.approx(
            parity["min_cosine"], abs=1e-4
        )
    assert choice.kind.name == graph_choose(manifest, source, min_cosine=0.99).kind.name


def test_no_cache_and_no_torch_says_how_to_export(settings, tmp_path, caplog, torch_not_installed):
    """A runtime-only install (no torch) with no exported graphs names the fix instead of
    failing on an import deep in a request."""
    with caplog.at_level(logging.ERROR, logger="memory_site.providers.local_onnx"):
        assert onnx_model_prepare(tmp_path) is None
    assert "pip install '.[export]'" in caplog.text
    assert not any(onnx_cache_dir(tmp_path).glob("*.onnx"))


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
print(get_embedder().graph)
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


@pytest.mark.parametrize(("min_cosine", "graph"), [("0.5", "int8"), ("0.9999", "fp32")])
def test_web_and_worker_code_with_onnx_import_neither_torch_nor_sentence_transformers(
    min_cosine, graph
):
    completed = run_probe(
        EMBEDDING_PROVIDER="local",
        EMBEDDING_BACKEND="onnx",
        EMBEDDING_ONNX_PARITY_MIN_COSINE=min_cosine,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    name, chosen, loaded = completed.stdout.strip().splitlines()[-3:]
    assert (name, chosen) == ("OnnxEmbedder", graph)
    assert loaded == "[]"
    assert " ERROR " not in completed.stderr


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


def test_a_long_text_alone_on_the_threaded_session_gets_its_batched_vector(onnx_backend, settings):
    """On the slower graphs one long text runs on a session with more intra-op threads; its
    vector is the one it gets among others (to float precision)."""
    settings.EMBEDDING_ONNX_PARITY_MIN_COSINE = 0.9999  # the fp32 graph, threaded_single
    settings.EMBEDDING_ONNX_SINGLE_TEXT_THREADS = 2
    embedder = get_embedder()
    assert embedder.graph == "fp32" and embedder.single_threads == 2
    alone = embedder.embed([TEXTS[-1]])[0]
    together = embedder.embed([TEXTS[-1], "ok"])[0]
    assert np.allclose(alone, together, atol=1e-5)


def test_without_any_embedder_a_search_is_its_keyword_side(
    api, user, settings, tmp_path, torch_not_installed
):
    """A runtime-only install that cannot embed (no graphs, no torch) still stores messages and
    answers searches by their words, instead of a 502 per search."""
    settings.EMBEDDING_PROVIDER = "local"
    settings.EMBEDDING_BACKEND = "onnx"
    settings.MNEMO_MODELS_DIR = tmp_path
    settings.MNEMO_EMBED_AFTER_RESPONSE = False
    _local_embedder.cache_clear()
    try:
        session = api.post("/api/v1/chat/new", {}, format="json").json()
        stored = api.post(
            "/api/v1/chat/messages",
            {
                "session_id": session["session_id"],
                "role": "user",
                "content": "I keep two beehives on the allotment.",
            },
            format="json",
        )
        assert stored.status_code == 201
        found = api.post("/api/v1/memory/search", {"query": "beehives"}, format="json")
        semantic = api.post(
            "/api/v1/memory/search", {"query": "beehives", "mode": "semantic"}, format="json"
        )
    finally:
        _local_embedder.cache_clear()
    assert found.status_code == 200
    assert [item["content"] for item in found.json()["items"]] == [
        "User: I keep two beehives on the allotment."
    ]
    assert semantic.status_code == 502


WARM_WITHOUT_EMBEDDER = """
import importlib.util as util
real = util.find_spec
util.find_spec = lambda name, *args: None if name == "torch" else real(name, *args)
import django
django.setup()
print("started")
"""


def test_a_server_without_any_embedder_still_starts(tmp_path):
    """`manage.py serve` warms the embedder in each process: with none to warm (no graphs, no
    torch) the process starts anyway, having said how to export them."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "MNEMO_WARM_EMBEDDER": "1",
        "MNEMO_MODELS_DIR": str(tmp_path),
        "EMBEDDING_PROVIDER": "local",
        "EMBEDDING_BACKEND": "onnx",
    }
    completed = subprocess.run(
        [sys.executable, "-c", WARM_WITHOUT_EMBEDDER],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "started" in completed.stdout
    assert "pip install '.[export]'" in completed.stderr
