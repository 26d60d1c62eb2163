"""The provider layer: every LLM and embedding call in Mnemo goes through `get_llm()` and
`get_embedder()`. Configuration is read from settings on each call (so tests can point it at
a loopback server) and clients are cached per configuration."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from functools import lru_cache
from typing import TypeVar

from django.conf import settings

from memory_site.providers.base import (
    LLM,
    ChatResult,
    Embedder,
    JsonResult,
    ProviderError,
    StreamChunk,
)
from memory_site.providers.local import LocalEmbedder, LocalLLM, UnavailableEmbedder
from memory_site.providers.local_onnx import OnnxEmbedder, onnx_model_prepare
from memory_site.providers.openai_provider import OpenAIEmbedder, OpenAILLM, make_client

__all__ = [
    "LLM",
    "ChatResult",
    "Embedder",
    "JsonResult",
    "ProviderError",
    "StreamChunk",
    "get_embedder",
    "get_llm",
    "model_or_offline",
]

T = TypeVar("T")


@lru_cache(maxsize=8)
def _openai_llm(api_key, base_url, model, json_mode, timeout, retries) -> OpenAILLM:
    client = make_client(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=retries)
    return OpenAILLM(client, model=model, json_mode=json_mode)


@lru_cache(maxsize=8)
def _openai_embedder(api_key, base_url, model, dimensions, timeout, retries) -> OpenAIEmbedder:
    client = make_client(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=retries)
    return OpenAIEmbedder(client, model=model, dimensions=dimensions)


logger = logging.getLogger(__name__)


@lru_cache(maxsize=4)
def _local_embedder(backend: str, min_cosine: float) -> Embedder:
    """The onnx embedder serving the graph `onnx_model_prepare` chose for this CPU (exported
    on first use); torch only when explicitly configured or when the export itself failed.
    Every graph gives all-MiniLM-L6-v2 vectors, so stored vectors stay valid either way."""
    if backend == "onnx":
        choice = onnx_model_prepare(settings.MNEMO_MODELS_DIR, min_cosine=min_cosine)
        if choice is not None:
            return OnnxEmbedder(
                choice.path,
                threads=settings.EMBEDDING_ONNX_THREADS,
                single_threads=(
                    settings.EMBEDDING_ONNX_SINGLE_TEXT_THREADS
                    if choice.kind.threaded_single
                    else None
                ),
                workers=settings.EMBEDDING_WORKERS,
                graph=choice.kind.name,
            )
        if importlib.util.find_spec("torch") is None:
            return UnavailableEmbedder(
                "no local embedder: the ONNX graphs are not exported and torch is not "
                "installed (pip install '.[export]', then manage.py embedder_prepare)"
            )
        logger.error("EMBEDDING_BACKEND=onnx is not usable; local embeddings run on torch")
    return LocalEmbedder(
        batch_size=settings.EMBEDDING_BATCH_SIZE,
        threads=settings.EMBEDDING_TORCH_THREADS,
        workers=settings.EMBEDDING_WORKERS,
    )


_LOCAL_LLM = LocalLLM()


def get_llm() -> LLM:
    if settings.LLM_PROVIDER == "local":
        return _LOCAL_LLM
    return _openai_llm(
        settings.OPENAI_API_KEY,
        settings.OPENAI_BASE_URL,
        settings.LLM_MODEL,
        settings.LLM_JSON_MODE,
        settings.LLM_TIMEOUT_SECONDS,
        settings.LLM_MAX_RETRIES,
    )


def get_embedder() -> Embedder:
    if settings.EMBEDDING_PROVIDER == "local":
        return _local_embedder(
            settings.EMBEDDING_BACKEND, settings.EMBEDDING_ONNX_PARITY_MIN_COSINE
        )
    return _openai_embedder(
        settings.OPENAI_API_KEY,
        settings.OPENAI_BASE_URL,
        settings.EMBEDDING_MODEL,
        settings.EMBEDDING_DIMENSIONS,
        settings.LLM_TIMEOUT_SECONDS,
        settings.LLM_MAX_RETRIES,
    )


def embed_one(text: str) -> list[float]:
    return get_embedder().embed([text])[0]


def model_or_offline(
    model: Callable[[LLM], T], offline: Callable[[], T], *, llm: LLM | None = None
) -> T:
    """``model(llm)`` with a configured LLM, else ``offline()`` (the local algorithm).

    The one place a service's model-or-offline choice is made, so services do not test
    ``is_local`` themselves. ``llm`` defaults to ``get_llm()``.
    """
    llm = llm or get_llm()
    return offline() if llm.is_local else model(llm)
