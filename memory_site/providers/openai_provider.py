"""OpenAI-compatible providers (OpenAI, Ollama, vLLM, LM Studio...) through the `openai` client."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Sequence

import numpy as np
import openai

from memory_site.metrics import EMBEDDED_TEXTS
from memory_site.providers.base import (
    ChatResult,
    JsonResult,
    ProviderError,
    StreamChunk,
    json_result,
)


def make_client(*, api_key: str, base_url: str, timeout: float, max_retries: int) -> openai.OpenAI:
    return openai.OpenAI(
        api_key=api_key or "not-needed",
        base_url=base_url or None,
        timeout=timeout,
        max_retries=max_retries,
    )


class OpenAILLM:
    name = "openai"
    is_local = False

    def __init__(self, client: openai.OpenAI, *, model: str, json_mode: str = "json_schema"):
        self.client = client
        self.model = model
        self.json_mode = json_mode

    def chat(self, messages: list[dict], *, model: str | None = None) -> ChatResult:
        try:
            response = self.client.chat.completions.create(
                model=model or self.model, messages=messages
            )
        except openai.OpenAIError as exc:
            raise ProviderError(f"LLM request failed: {exc}") from exc
        usage = response.usage
        return ChatResult(
            text=response.choices[0].message.content or "",
            model=response.model or model or self.model,
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
            response_id=response.id or "",
        )

    def stream(self, messages: list[dict], *, model: str | None = None) -> Iterator[StreamChunk]:
        """Yield text deltas, then one chunk whose `result` holds the full text and usage."""
        used_model = model or self.model
        try:
            stream = self.client.chat.completions.create(
                model=used_model,
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
            )
            parts: list[str] = []
            response_id, tokens_in, tokens_out = "", 0, 0
            for event in stream:
                response_id = event.id or response_id
                used_model = event.model or used_model
                if event.usage:
                    tokens_in = event.usage.prompt_tokens or 0
                    tokens_out = event.usage.completion_tokens or 0
                for choice in event.choices or []:
                    delta = choice.delta.content if choice.delta else None
                    if delta:
                        parts.append(delta)
                        yield StreamChunk(text=delta, meta={"id": response_id})
        except openai.OpenAIError as exc:
            raise ProviderError(f"LLM stream failed: {exc}") from exc
        yield StreamChunk(
            result=ChatResult(
                text="".join(parts),
                model=used_model,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                response_id=response_id,
            )
        )

    def chat_json(
        self, messages, *, schema: dict, schema_name: str, model: str | None = None
    ) -> JsonResult:
        """Structured output: a JSON schema where the server supports it, else JSON mode.

        Returns the parsed object with its usage (see ``JsonResult``). Raises ProviderError
        for a failed call or an answer that is not a JSON object.
        """
        if self.json_mode == "json_schema":
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        else:
            response_format = {"type": "json_object"}
        result = None
        try:
            response = self.client.chat.completions.create(
                model=model or self.model, messages=messages, response_format=response_format
            )
            result = response.choices[0].message.content or ""
            parsed = json.loads(result)
        except openai.OpenAIError as exc:
            raise ProviderError(f"LLM request failed: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise ProviderError(f"LLM returned invalid JSON: {result[:200]!r}") from exc
        if not isinstance(parsed, dict):
            raise ProviderError("LLM returned JSON that is not an object")
        return json_result(messages, parsed, model=model or self.model)


class OpenAIEmbedder:
    name = "openai"

    def __init__(
        self, client: openai.OpenAI, *, model: str, dimensions: int, batch_size: int = 256
    ):
        self.client = client
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        EMBEDDED_TEXTS.labels("openai").inc(len(texts))
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                # The raw body, read here: the client's own model building takes ~0.5 s per
                # 64 vectors of 384 floats when a server answers with float lists (servers that
                # ignore encoding_format); base64 is what OpenAI sends.
                raw = self.client.embeddings.with_raw_response.create(
                    model=self.model, input=batch, encoding_format="base64"
                )
                payload = raw.http_response.json()
            except openai.OpenAIError as exc:
                raise ProviderError(f"embedding request failed: {exc}") from exc
            except ValueError as exc:
                raise ProviderError("embedding response is not JSON") from exc
            vectors.extend(self._vectors_of(payload, expected=len(batch)))
        return vectors

    def _vectors_of(self, payload: object, *, expected: int) -> list[list[float]]:
        """The response's vectors in input order, each base64 float32 or a list of numbers."""
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            raise ProviderError("embedding response count does not match the request")
        by_index: dict[int, list[float]] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            embedding = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < expected or index in by_index:
                raise ProviderError("embedding response has a missing or repeated index")
            if isinstance(embedding, str):
                try:
                    vector = np.frombuffer(base64.b64decode(embedding), dtype="<f4").tolist()
                except (ValueError, binascii.Error) as exc:
                    raise ProviderError("embedding response holds bad base64") from exc
            elif isinstance(embedding, list) and all(
                isinstance(value, int | float) for value in embedding
            ):
                vector = [float(value) for value in embedding]
            else:
                raise ProviderError("embedding response holds no vector")
            if len(vector) != self.dimensions:
                raise ProviderError(
                    f"embedding model returned {len(vector)} dimensions, "
                    f"EMBEDDING_DIMENSIONS is {self.dimensions}"
                )
            by_index[index] = vector
        return [by_index[index] for index in range(expected)]
