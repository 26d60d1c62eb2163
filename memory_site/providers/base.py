"""What every model provider offers. Providers know no domain model: text in, text or vectors out."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memory_site.tokens import count_tokens


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
class JsonResult:
    """A structured answer and what it cost: the one place a JSON call's tokens are counted.

    Counts are exact cl100k counts of what was sent and received (an estimate for other
    tokenizers), so every usage row of a structured call is computed the same way.
    """

    data: dict
    model: str
    tokens_in: int = 0
    tokens_out: int = 0


def prompt_tokens(messages: Sequence[dict]) -> int:
    """Tokens of the messages sent (also billed for a call whose answer is abandoned)."""
    return sum(count_tokens(message.get("content") or "") for message in messages)


def json_result(messages: Sequence[dict], data: dict, *, model: str) -> JsonResult:
    return JsonResult(
        data=data,
        model=model,
        tokens_in=prompt_tokens(messages),
        tokens_out=count_tokens(json.dumps(data, ensure_ascii=False)) if data else 0,
    )


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
    ) -> JsonResult: ...


class Embedder(Protocol):
    name: str
    model: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...
