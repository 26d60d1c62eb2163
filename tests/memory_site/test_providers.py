"""The provider layer against a real OpenAI-compatible server on loopback, and the local embedder."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memory_site.providers import ProviderError, get_embedder, get_llm, model_or_offline
from memory_site.providers.local import LocalEmbedder
from memory_site.tokens import count_tokens
from tests.fake_openai import hashed_embedding


def test_openai_chat_and_stream(fake_openai):
    fake_openai.reply_text = "Paris is the capital of France."
    llm = get_llm()
    assert llm.is_local is False
    result = llm.chat([{"role": "user", "content": "Capital of France?"}])
    assert result.text == "Paris is the capital of France."
    assert result.tokens_out > 0

    chunks = list(llm.stream([{"role": "user", "content": "Capital of France?"}]))
    deltas = [c.text for c in chunks if c.text]
    assert len(deltas) > 1, "the reply must arrive in several pieces"
    assert "".join(deltas) == "Paris is the capital of France."
    final = chunks[-1].result
    assert final.text == "Paris is the capital of France."
    assert final.tokens_in > 0 and final.tokens_out == 6
    assert final.response_id.startswith("chatcmpl-")
    sent = fake_openai.bodies("/chat/completions")[-1]
    assert sent["stream"] is True and sent["model"] == "gpt-4o-mini"


def test_openai_json_output(fake_openai):
    fake_openai.json_responder = lambda body: {"facts": ["Alice lives in Paris."]}
    result = get_llm().chat_json(
        [{"role": "user", "content": "extract"}],
        schema={
            "type": "object",
            "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
            "required": ["facts"],
            "additionalProperties": False,
        },
        schema_name="facts",
    )
    assert result.data == {"facts": ["Alice lives in Paris."]}
    assert result.model == "gpt-4o-mini"
    assert result.tokens_in == count_tokens("extract")
    assert result.tokens_out == count_tokens(json.dumps(result.data))
    assert fake_openai.bodies("/chat/completions")[-1]["response_format"]["type"] == "json_schema"


def test_openai_embeddings(fake_openai_embeddings, settings):
    vectors = get_embedder().embed(["hello world", "another text"])
    assert len(vectors) == 2
    assert all(len(v) == settings.EMBEDDING_DIMENSIONS for v in vectors)
    assert fake_openai_embeddings.bodies("/embeddings")[-1]["input"] == [
        "hello world",
        "another text",
    ]


@pytest.mark.parametrize("as_floats", [False, True], ids=["base64", "float-lists"])
def test_openai_embeddings_are_the_servers_vectors_in_input_order(
    fake_openai_embeddings, settings, as_floats
):
    """OpenAI answers in base64 (asked for); servers that ignore that send float lists."""
    fake_openai_embeddings.embeddings_as_floats = as_floats
    texts = ["the garden needs water", "my sister Ines", "", "Zoë moved to Málaga"]
    vectors = get_embedder().embed(texts)
    expected = [hashed_embedding(text, settings.EMBEDDING_DIMENSIONS) for text in texts]
    assert np.allclose(vectors, expected, atol=1e-6)
    assert fake_openai_embeddings.bodies("/embeddings")[-1]["encoding_format"] == "base64"


def test_a_broken_embedding_response_is_a_provider_error(fake_openai_embeddings, settings):
    settings.EMBEDDING_DIMENSIONS = 8  # the server answers with 384
    with pytest.raises(ProviderError, match="384 dimensions, EMBEDDING_DIMENSIONS is 8"):
        get_embedder().embed(["hello"])


def test_server_error_becomes_provider_error(fake_openai):
    fake_openai.fail_count = 1
    with pytest.raises(ProviderError, match="500|failed"):
        get_llm().chat([{"role": "user", "content": "hi"}])


def test_retries_recover_from_one_failure(fake_openai, settings):
    settings.LLM_MAX_RETRIES = 2
    fake_openai.fail_count = 1
    assert get_llm().chat([{"role": "user", "content": "hi"}]).text == fake_openai.reply_text


def test_timeout_becomes_provider_error(fake_openai, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.5
    fake_openai.delay_seconds = 2.0
    with pytest.raises(ProviderError):
        get_llm().chat([{"role": "user", "content": "hi"}])


def test_local_llm_is_honest_and_shows_context(settings):
    settings.LLM_PROVIDER = "local"
    llm = get_llm()
    assert llm.is_local
    text = "".join(
        c.text
        for c in llm.stream(
            [
                {"role": "system", "content": "[Recent context]\n- likes hiking"},
                {"role": "user", "content": "What do I like?"},
            ]
        )
    )
    assert "no language model configured" in text
    assert "likes hiking" in text


def test_local_embedder_unit_vectors_and_paraphrase_ranking(settings):
    settings.EMBEDDING_PROVIDER = "local"
    embedder = get_embedder()
    vectors = np.array(
        embedder.embed(
            [
                "How do I bake sourdough bread at home?",
                "What's the way to make homemade sourdough loaves?",
                "The stock market fell sharply on Tuesday.",
            ]
        )
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    paraphrase, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert paraphrase > unrelated + 0.3


def test_local_embedder_split_over_workers_keeps_each_text_with_its_vector():
    embedder = LocalEmbedder(batch_size=3, workers=2)
    texts = [
        "A long note about pruning roses in late winter, just above an outward bud. " * 4,
        "Kyoto in autumn",
        "Zürich café 日本 😊",
        "The quarterly VAT return is due at the end of April.",
        "ok",
        "How do I bake sourdough bread at home?",
        "Marathon taper: cut mileage by a third in the last two weeks.",
    ]
    together = np.array(embedder.embed(texts))  # three batches on two threads
    alone = np.array([embedder.embed([text])[0] for text in texts])
    assert together.shape == (7, 384)
    assert np.allclose(together, alone, atol=1e-4)


def test_local_embedder_serves_concurrent_callers():
    """Requests embed at the same time (threads of the web server): each gets its own vectors."""
    embedder = LocalEmbedder(workers=2)
    texts = [f"Message number {n} about the garden shed and its {n} tools." for n in range(12)]
    expected = [embedder.embed([text, text[::-1]]) for text in texts]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda text: embedder.embed([text, text[::-1]]), texts * 3))
    assert len(results) == 36
    for index, vectors in enumerate(results):
        assert np.allclose(vectors, expected[index % 12], atol=1e-4)


def test_model_or_offline_runs_the_offline_algorithm_without_a_model(settings):
    settings.LLM_PROVIDER = "local"
    assert model_or_offline(lambda llm: "model", lambda: "offline") == "offline"


def test_model_or_offline_hands_the_configured_model_to_the_model_path(fake_openai):
    assert model_or_offline(lambda llm: llm.model, lambda: "offline") == "gpt-4o-mini"
