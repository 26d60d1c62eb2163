"""What every model provider offers. Providers know no domain model: text in, text or vectors out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol


class ProviderError(Exception):
    """A model call failed (network, timeout, HTTP error, unparseable output)."""


@dataclass
class ChatResult:
    text: str
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    response_id: str = ""


@dataclass
class StreamChunk:
    """One streamed delta; the last chunk of a stream carries `result` with the usage."""

    text: str = ""
    result: ChatResult | None = None
    meta: dict = field(default_factory=dict)


class LLM(Protocol):
    name: str
    model: str
    is_local: bool

    def chat(self, messages: list[dict], *, model: str | None = None) -> ChatResult: ...

    def stream(
        self, messages: list[dict], *, model: str | None = None
    ) -> Iterator[StreamChunk]: ...

    def chat_json(
        self, messages: list[dict], *, schema: dict, schema_name: str, model: str | None = None
    ) -> dict: ...


class Embedder(Protocol):
    name: str
    model: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...
