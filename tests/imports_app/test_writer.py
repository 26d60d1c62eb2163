"""The chunk writer: one chunk per pair, dedupe by the pair ledger, changed exports, redaction."""

from __future__ import annotations

import json

import pytest

from imports_app.models import ImportedConversation, ImportJob
from tests.imports_app.helpers import EXCHANGES, import_chunks, run_import
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    write_json,
)

pytestmark = pytest.mark.django_db


def test_import_writes_one_chunk_per_pair_with_frontmatter(
    user, tmp_path, fake_embedder, upload_dir
):
    path = write_json(
        tmp_path / "conversations.json",
        [chatgpt_linear("pgvector in Django", EXCHANGES, conversation_id="conv-pg")],
    )

    job = run_import(user, path, agent_id="researcher")

    assert job.status == ImportJob.Status.DONE
    [manifest] = job.files.all()
    assert (manifest.status, manifest.format, manifest.turn_pairs, manifest.chunks_written) == (
        "imported",
        "chatgpt",
        3,
        3,
    )
    assert len(manifest.content_hash) == 64 and manifest.size_bytes == path.stat().st_size
    chunks = list(import_chunks(user).order_by("occurred_at"))
    assert [c.metadata["turn_range"] for c in chunks] == ["1", "2", "3"]
    assert sorted(c.chunk_id for c in chunks) == sorted(manifest.chunk_ids)
    first = chunks[0]
    assert first.metadata["source_platform"] == "chatgpt"
    assert first.metadata["conversation_title"] == "pgvector in Django"
    assert first.metadata["model_used"] == "gpt-4o"
    assert first.metadata["timestamp"] == "2023-11-14T22:14:20Z"
    assert first.metadata["agent_id"] == "researcher" and first.agent_id == "researcher"
    assert 1 <= len(first.topics) <= 3 and first.metadata["topics"] == first.topics
    assert first.header and "ChatGPT" in first.header
    assert "**User:**\nHow do I configure pgvector" in first.content
    assert first.embedding is not None and len(first.embedding) == 384


def test_embeddings_are_made_from_header_and_prompt_only(user, tmp_path, fake_embedder, upload_dir):
    reply = "Unrelated trivia: the okapi is a giraffid. " * 3
    path = write_json(
        tmp_path / "c.json",
        [chatgpt_linear("Sourdough", [("Best hydration for sourdough?", reply)])],
    )

    run_import(user, path)

    [chunk] = import_chunks(user)
    sent = [text for body in fake_embedder.bodies("/embeddings") for text in body["input"]]
    assert sent == [f"{chunk.header}\n\nBest hydration for sourdough?"]
    assert chunk.embedding_text == sent[0]
    assert reply.strip() in chunk.content  # the reply is stored, just not embedded


def test_importing_the_same_file_again_writes_nothing(user, tmp_path, fake_embedder, upload_dir):
    path = write_json(tmp_path / "conversations.json", [chatgpt_linear("A", EXCHANGES)])
    run_import(user, path)
    count = import_chunks(user).count()

    again = run_import(user, path)

    [manifest] = again.files.all()
    assert manifest.status == "skipped" and manifest.chunks_written == 0
    assert manifest.duplicates_skipped == 3
    assert "already imported" in manifest.error
    assert import_chunks(user).count() == count
    assert again.summary["chunks_generated"] == 0
    assert again.summary["chunks_skipped_duplicates"] == 3


def test_same_conversations_in_a_renamed_reformatted_file_are_not_duplicated(
    user, tmp_path, fake_embedder, upload_dir
):
    conversation = chatgpt_linear("A", EXCHANGES, conversation_id="conv-a")
    write_json(tmp_path / "one.json", [conversation])
    run_import(user, tmp_path / "one.json")
    reformatted = tmp_path / "two.json"
    reformatted.write_text(json.dumps([conversation], indent=4))  # other bytes, same content

    job = run_import(user, reformatted)

    [manifest] = job.files.all()
    assert manifest.status == "imported"
    assert (manifest.chunks_written, manifest.duplicates_skipped) == (0, 3)
    assert import_chunks(user).count() == 3


def test_a_changed_file_adds_only_its_new_pairs(user, tmp_path, fake_embedder, upload_dir):
    path = tmp_path / "conversations.json"
    write_json(path, [chatgpt_linear("A", EXCHANGES[:2], conversation_id="conv-a")])
    run_import(user, path)
    before = set(import_chunks(user).values_list("chunk_id", flat=True))

    write_json(
        path,
        [
            chatgpt_linear("A", EXCHANGES, conversation_id="conv-a"),
            chatgpt_linear("B", [("Capital of Peru?", "Lima.")], conversation_id="conv-b"),
        ],
    )
    job = run_import(user, path)

    [manifest] = job.files.all()
    assert (manifest.turn_pairs, manifest.chunks_written, manifest.duplicates_skipped) == (4, 2, 2)
    after = set(import_chunks(user).values_list("chunk_id", flat=True))
    assert before < after and len(after) == 4
    new = import_chunks(user).exclude(chunk_id__in=before)
    assert sorted(c.metadata["turn_range"] for c in new) == ["1", "3"]
    ledger = ImportedConversation.objects.get(user=user, conversation_id="conv-a")
    assert len(ledger.pair_keys) == 3


def test_an_edited_earlier_turn_gets_a_new_chunk_without_overwriting(
    user, tmp_path, fake_embedder, upload_dir
):
    path = tmp_path / "c.json"
    write_json(path, [chatgpt_linear("A", [("Pick a colour", "Red")], conversation_id="conv-a")])
    run_import(user, path)
    write_json(path, [chatgpt_linear("A", [("Pick a colour", "Blue")], conversation_id="conv-a")])

    run_import(user, path)

    chunks = list(import_chunks(user).order_by("id"))
    assert len(chunks) == 2
    assert chunks[1].chunk_id == chunks[0].chunk_id + "-r2"
    assert "Red" in chunks[0].content and "Blue" in chunks[1].content


def test_imported_text_is_redacted_and_the_original_kept_encrypted(
    user, tmp_path, fake_embedder, upload_dir
):
    secret = "My email is jane.doe@example.com and key sk-proj-AbCdEf1234567890XyZaBcDeF"
    path = write_json(tmp_path / "c.json", [chatgpt_linear("Contact", [(secret, "Noted, Jane.")])])

    run_import(user, path)

    [chunk] = import_chunks(user)
    assert "jane.doe@example.com" not in chunk.content + chunk.header + chunk.embedding_text
    assert "sk-proj-AbCdEf" not in chunk.content + chunk.header
    assert "[EMAIL]" in chunk.content
    assert "jane.doe@example.com" in chunk.raw_content  # decrypted on read
    assert "jane.doe@example.com" not in fake_embedder.all_text_sent()


def test_the_same_export_for_two_users_is_stored_for_each(
    user, other_user, tmp_path, fake_embedder, upload_dir
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("Shared", EXCHANGES)])

    run_import(user, path)
    job = run_import(other_user, path)

    assert job.files.get().status == "imported"
    assert import_chunks(user).count() == import_chunks(other_user).count() == 3
