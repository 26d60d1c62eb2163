"""One header generator for every turn-pair chunk: imports and live exchanges ask the model the
same way, and whatever the model writes is redacted and cleaned before it is stored."""

from __future__ import annotations

import json

import pytest

from ingestion_app.models import MemoryItem
from ingestion_app.services.headers import HEADER_SCHEMA_NAME
from sessions_app.models import UsageLog
from tests.factories import add_message, open_session
from tests.imports_app.helpers import import_chunks, run_import
from tests.ingestion_app.export_builders import chatgpt_linear, write_json

pytestmark = pytest.mark.django_db

LEAKY_HEADER = (
    "The user plans a smoked brisket dinner and can be reached at jane.doe@example.com. "
    "They asked about resting time."
)
MESSY_TOPICS = ["Brisket  Smoking!", "brisket smoking", "x", "BBQ_timing", 7, "y" * 80]
CLEAN_TOPICS = ["brisket-smoking", "bbq_timing", "y" * 40]


def leaky_responder(body: dict) -> dict:
    assert body["response_format"]["json_schema"]["name"] == HEADER_SCHEMA_NAME
    payload = json.loads(body["messages"][1]["content"])
    return {
        "chunks": [
            {"index": item["index"], "header": LEAKY_HEADER, "topics": MESSY_TOPICS}
            for item in payload["chunks"]
        ]
    }


def assert_redacted_and_clean(chunk: MemoryItem) -> None:
    assert "jane.doe@example.com" not in chunk.header
    assert "[EMAIL]" in chunk.header
    assert chunk.header.startswith("The user plans a smoked brisket dinner")
    assert chunk.topics == CLEAN_TOPICS


def test_an_imported_chunk_gets_the_models_header_redacted_with_clean_topics(
    user, tmp_path, fake_openai_embeddings, upload_dir
):
    fake_openai_embeddings.json_responder = leaky_responder
    exchanges = [("How long should a brisket rest?", "At least an hour, wrapped.")]
    path = write_json(tmp_path / "c.json", [chatgpt_linear("Brisket", exchanges)])

    job = run_import(user, path)

    chunk = MemoryItem.objects.get(user=user, source=MemoryItem.Source.CHUNK)
    assert_redacted_and_clean(chunk)
    assert chunk.metadata["topics"] == CLEAN_TOPICS
    assert job.summary["verification"]["ok"] is True
    usage = UsageLog.objects.get(user=user, kind="import_headers")
    assert usage.tokens_in > 0 and usage.tokens_out > 0


def test_a_live_exchange_gets_the_same_redacted_header_and_clean_topics(user, fake_openai):
    fake_openai.json_responder = leaky_responder
    session = open_session(user)
    add_message(session, "user", "How long should a brisket rest?")
    add_message(session, "assistant", "At least an hour, wrapped.")

    chunk = MemoryItem.objects.filter(user=user, source="chunk").exclude(
        metadata__contains={"granularity": "message"}
    )
    chunk = chunk.get()
    assert_redacted_and_clean(chunk)
    assert chunk.metadata["header_status"] == "llm"
    body = fake_openai.bodies("/chat/completions")[-1]
    sent = json.loads(body["messages"][1]["content"])["chunks"]
    assert [entry["user"] for entry in sent] == ["How long should a brisket rest?"]


def test_llm_headers_are_batched_and_fall_back_to_local_per_chunk(
    user, tmp_path, fake_openai_embeddings, upload_dir
):
    exchanges = [(f"Question {n} about Dutch VAT rule {n}?", f"Answer {n}.") for n in range(1, 11)]

    def responder(body):
        payload = json.loads(body["messages"][1]["content"])
        entries = [
            {
                "index": item["index"],
                "header": f"Exchange about VAT rule {item['turns']} on {item['platform']}. "
                "The user asked how the rule applies.",
                "topics": ["Dutch VAT", "tax rules"],
            }
            for item in payload["chunks"]
            if item["turns"] != "3"  # the model forgets one chunk
        ]
        return {"chunks": entries}

    fake_openai_embeddings.json_responder = responder
    path = write_json(tmp_path / "c.json", [chatgpt_linear("VAT", exchanges)])

    run_import(user, path)

    chat_calls = fake_openai_embeddings.bodies("/chat/completions")
    assert len(chat_calls) == 2  # 10 chunks in batches of 8
    chunks = {c.metadata["turn_range"]: c for c in import_chunks(user)}
    assert chunks["1"].header.startswith("Exchange about VAT rule 1 on chatgpt.")
    assert chunks["1"].topics == ["dutch-vat", "tax-rules"]
    assert chunks["3"].header.startswith("ChatGPT conversation")  # local fallback
    assert chunks["3"].topics
