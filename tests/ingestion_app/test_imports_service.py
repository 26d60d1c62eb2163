"""The import pipeline against the database: dedupe, changed files, atomicity, verification."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from ingestion_app.chunking.markdown import FRONTMATTER_FIELDS, parse_markdown, render_markdown
from ingestion_app.models import ImportedConversation, ImportFile, ImportJob, MemoryItem
from ingestion_app.services.imports import conversations as import_conversations
from ingestion_app.services.imports import jobs, verification
from ingestion_app.services.imports.jobs import import_job_create_from_paths, import_job_run
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    claude_conversation,
    write_json,
)

pytestmark = pytest.mark.django_db


def _run(user, *paths, **kwargs) -> ImportJob:
    job = import_job_create_from_paths(user=user, paths=list(paths), **kwargs)
    return import_job_run(job_id=job.id)


def _chunks(user):
    return MemoryItem.objects.filter(user=user, source=MemoryItem.Source.CHUNK)


EXCHANGES = [
    ("How do I configure pgvector HNSW indexes in Django?", "Use HnswIndex with opclasses."),
    ("Which opclass matches cosine distance?", "vector_cosine_ops with CosineDistance."),
    ("How do I store embeddings from sentence-transformers?", "Convert to a list of floats."),
]


def test_import_writes_one_chunk_per_pair_with_frontmatter(
    user, tmp_path, fake_embedder, upload_dir
):
    path = write_json(
        tmp_path / "conversations.json",
        [chatgpt_linear("pgvector in Django", EXCHANGES, conversation_id="conv-pg")],
    )

    job = _run(user, path, agent_id="researcher")

    assert job.status == ImportJob.Status.DONE
    [manifest] = job.files.all()
    assert (manifest.status, manifest.format, manifest.turn_pairs, manifest.chunks_written) == (
        "imported",
        "chatgpt",
        3,
        3,
    )
    assert len(manifest.content_hash) == 64 and manifest.size_bytes == path.stat().st_size
    chunks = list(_chunks(user).order_by("occurred_at"))
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

    _run(user, path)

    [chunk] = _chunks(user)
    sent = [text for body in fake_embedder.bodies("/embeddings") for text in body["input"]]
    assert sent == [f"{chunk.header}\n\nBest hydration for sourdough?"]
    assert chunk.embedding_text == sent[0]
    assert reply.strip() in chunk.content  # the reply is stored, just not embedded


def test_importing_the_same_file_again_writes_nothing(user, tmp_path, fake_embedder, upload_dir):
    path = write_json(tmp_path / "conversations.json", [chatgpt_linear("A", EXCHANGES)])
    _run(user, path)
    count = _chunks(user).count()

    again = _run(user, path)

    [manifest] = again.files.all()
    assert manifest.status == "skipped" and manifest.chunks_written == 0
    assert manifest.duplicates_skipped == 3
    assert "already imported" in manifest.error
    assert _chunks(user).count() == count
    assert again.summary["chunks_generated"] == 0
    assert again.summary["chunks_skipped_duplicates"] == 3


def test_same_conversations_in_a_renamed_reformatted_file_are_not_duplicated(
    user, tmp_path, fake_embedder, upload_dir
):
    conversation = chatgpt_linear("A", EXCHANGES, conversation_id="conv-a")
    write_json(tmp_path / "one.json", [conversation])
    _run(user, tmp_path / "one.json")
    reformatted = tmp_path / "two.json"
    reformatted.write_text(json.dumps([conversation], indent=4))  # other bytes, same content

    job = _run(user, reformatted)

    [manifest] = job.files.all()
    assert manifest.status == "imported"
    assert (manifest.chunks_written, manifest.duplicates_skipped) == (0, 3)
    assert _chunks(user).count() == 3


def test_a_changed_file_adds_only_its_new_pairs(user, tmp_path, fake_embedder, upload_dir):
    path = tmp_path / "conversations.json"
    write_json(path, [chatgpt_linear("A", EXCHANGES[:2], conversation_id="conv-a")])
    _run(user, path)
    before = set(_chunks(user).values_list("chunk_id", flat=True))

    write_json(
        path,
        [
            chatgpt_linear("A", EXCHANGES, conversation_id="conv-a"),
            chatgpt_linear("B", [("Capital of Peru?", "Lima.")], conversation_id="conv-b"),
        ],
    )
    job = _run(user, path)

    [manifest] = job.files.all()
    assert (manifest.turn_pairs, manifest.chunks_written, manifest.duplicates_skipped) == (4, 2, 2)
    after = set(_chunks(user).values_list("chunk_id", flat=True))
    assert before < after and len(after) == 4
    new = _chunks(user).exclude(chunk_id__in=before)
    assert sorted(c.metadata["turn_range"] for c in new) == ["1", "3"]
    ledger = ImportedConversation.objects.get(user=user, conversation_id="conv-a")
    assert len(ledger.pair_keys) == 3


def test_an_edited_earlier_turn_gets_a_new_chunk_without_overwriting(
    user, tmp_path, fake_embedder, upload_dir
):
    path = tmp_path / "c.json"
    write_json(path, [chatgpt_linear("A", [("Pick a colour", "Red")], conversation_id="conv-a")])
    _run(user, path)
    write_json(path, [chatgpt_linear("A", [("Pick a colour", "Blue")], conversation_id="conv-a")])

    _run(user, path)

    chunks = list(_chunks(user).order_by("id"))
    assert len(chunks) == 2
    assert chunks[1].chunk_id == chunks[0].chunk_id + "-r2"
    assert "Red" in chunks[0].content and "Blue" in chunks[1].content


def test_one_broken_file_leaves_no_chunks_and_does_not_stop_the_others(
    user, tmp_path, fake_embedder, upload_dir
):
    good = write_json(tmp_path / "a-good.json", [chatgpt_linear("Good", EXCHANGES)])
    data = json.dumps([chatgpt_linear(f"Broken {n}", EXCHANGES) for n in range(30)])
    broken = tmp_path / "b-broken.json"
    broken.write_text(data[: len(data) // 2 + 7])  # many complete conversations, then cut
    other = write_json(
        tmp_path / "c-claude.json",
        [
            claude_conversation(
                "C", [("human", "hi there, what is DNS?"), ("assistant", "A name system.")]
            )
        ],
    )

    job = _run(user, good, broken, other)

    by_name = {f.name: f for f in job.files.all()}
    assert by_name["a-good.json"].status == "imported"
    assert by_name["c-claude.json"].status == "imported"
    failed = by_name["b-broken.json"]
    assert failed.status == "failed" and "truncated or invalid JSON" in failed.error
    assert failed.chunks_written == 0 and failed.chunk_ids == []
    titles = set(_chunks(user).values_list("metadata__conversation_title", flat=True))
    assert not any(str(t).startswith("Broken") for t in titles)
    assert not ImportedConversation.objects.filter(title__startswith="Broken").exists()
    assert job.status == "done"
    assert job.summary["errors"]["count"] == 1
    assert job.summary["errors"]["files"][0]["name"] == "b-broken.json"
    assert "re-export" in job.summary["errors"]["files"][0]["recovery"]


def test_unrecognized_files_are_skipped_with_the_reason(user, tmp_path, fake_embedder, upload_dir):
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list: milk, eggs")

    job = _run(user, notes)

    [manifest] = job.files.all()
    assert (manifest.status, manifest.error) == ("skipped", "unrecognized format")
    assert job.summary["files_skipped"]["files"] == [
        {"name": "notes.txt", "reason": "unrecognized format"}
    ]


def test_a_non_empty_file_with_no_turn_pairs_is_flagged(user, tmp_path, fake_embedder, upload_dir):
    blank = claude_conversation("Blank", [("human", ""), ("assistant", "")])
    path = write_json(tmp_path / "conversations.json", [blank])

    job = _run(user, path)

    [manifest] = job.files.all()
    assert manifest.status == "failed"
    assert manifest.error.startswith("no turn pairs found")


def test_verification_report_checks_ids_counts_and_parsing(
    user, tmp_path, fake_embedder, upload_dir
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])

    job = _run(user, path)

    verification = job.summary["verification"]
    assert verification == {
        "ok": True,
        "chunk_ids_unique": True,
        "chunks_reported": 3,
        "chunks_found": 3,
        "chunks_parsed": 3,
        "unparseable": [],
        "new_pairs": 3,
        "pairs_in_chunks": 3,
        "each_pair_in_one_chunk": True,
    }
    assert job.summary["total_chunks"] == 3
    for chunk in _chunks(user):
        frontmatter, header, exchange = parse_markdown(
            render_markdown(
                frontmatter={k: chunk.metadata[k] for k in FRONTMATTER_FIELDS},
                header=chunk.header,
                exchange=chunk.content,
            )
        )
        assert frontmatter["chunk_id"] == chunk.chunk_id and exchange == chunk.content


def test_imported_text_is_redacted_and_the_original_kept_encrypted(
    user, tmp_path, fake_embedder, upload_dir
):
    secret = "My email is jane.doe@example.com and key sk-proj-AbCdEf1234567890XyZaBcDeF"
    path = write_json(tmp_path / "c.json", [chatgpt_linear("Contact", [(secret, "Noted, Jane.")])])

    _run(user, path)

    [chunk] = _chunks(user)
    assert "jane.doe@example.com" not in chunk.content + chunk.header + chunk.embedding_text
    assert "sk-proj-AbCdEf" not in chunk.content + chunk.header
    assert "[EMAIL]" in chunk.content
    assert "jane.doe@example.com" in chunk.raw_content  # decrypted on read
    assert "jane.doe@example.com" not in fake_embedder.all_text_sent()


def test_the_same_export_for_two_users_is_stored_for_each(
    user, other_user, tmp_path, fake_embedder, upload_dir
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("Shared", EXCHANGES)])

    _run(user, path)
    job = _run(other_user, path)

    assert job.files.get().status == "imported"
    assert _chunks(user).count() == _chunks(other_user).count() == 3


def test_job_runs_once_even_if_delivered_twice(user, tmp_path, fake_embedder, upload_dir):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])
    job = import_job_create_from_paths(user=user, paths=[path])

    first = import_job_run(job_id=job.id)
    second = import_job_run(job_id=job.id)

    assert first.status == second.status == "done"
    assert _chunks(user).count() == 3
    assert ImportFile.objects.filter(job=job).count() == 1


def test_embedder_failure_fails_the_file_atomically(user, tmp_path, fake_embedder, upload_dir):
    fake_embedder.fail_count = 100
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])

    job = _run(user, path)

    [manifest] = job.files.all()
    assert manifest.status == "failed" and "model provider failed" in manifest.error
    assert _chunks(user).count() == 0
    assert not ImportedConversation.objects.filter(user=user).exists()
    assert "recoverable" in job.summary["errors"]["files"][0]["recovery"]


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

    _run(user, path)

    chat_calls = fake_openai_embeddings.bodies("/chat/completions")
    assert len(chat_calls) == 2  # 10 chunks in batches of 8
    chunks = {c.metadata["turn_range"]: c for c in _chunks(user)}
    assert chunks["1"].header.startswith("Exchange about VAT rule 1 on chatgpt.")
    assert chunks["1"].topics == ["dutch-vat", "tax-rules"]
    assert chunks["3"].header.startswith("ChatGPT conversation")  # local fallback
    assert chunks["3"].topics


def test_worker_processes_give_the_same_chunks_as_inline(
    user, other_user, tmp_path, fake_embedder, upload_dir, monkeypatch
):
    conversations = [
        chatgpt_linear(f"Topic {n}", EXCHANGES, conversation_id=f"conv-{n}") for n in range(40)
    ]
    path = write_json(tmp_path / "c.json", conversations)
    monkeypatch.setattr(import_conversations, "PAIRS_PER_ROUND", 20)  # many rounds in flight

    _run(user, path)  # inline (small file)
    monkeypatch.setattr(import_conversations, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(import_conversations, "PARALLEL_WORKERS", 2)
    job = _run(other_user, path)

    assert job.files.get().chunks_written == 120
    inline = {
        (c.metadata["conversation_id"], c.metadata["turn_range"]): (c.header, c.topics, c.content)
        for c in _chunks(user)
    }
    pooled = {
        (c.metadata["conversation_id"], c.metadata["turn_range"]): (c.header, c.topics, c.content)
        for c in _chunks(other_user)
    }
    assert pooled == inline
    assert job.summary["verification"]["ok"] is True


def test_large_files_of_one_job_share_one_worker_pool(
    user, tmp_path, fake_embedder, upload_dir, monkeypatch
):
    started = []

    def pool():
        started.append(ThreadPoolExecutor(max_workers=2))
        started[-1]._max_workers = 2
        return started[-1]

    monkeypatch.setattr(import_conversations, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(import_conversations, "_worker_pool", pool)
    first = write_json(tmp_path / "a.json", [chatgpt_linear("A", EXCHANGES)])
    second = write_json(tmp_path / "b.json", [chatgpt_linear("B", EXCHANGES[:2])])

    job = _run(user, first, second)

    assert [f.status for f in job.files.order_by("position")] == ["imported", "imported"]
    assert _chunks(user).count() == 5
    assert job.summary["verification"]["ok"] is True
    assert len(started) == 1
    with pytest.raises(RuntimeError):  # shut down when the job ended
        started[0].submit(print)


def test_a_broken_worker_pool_falls_back_to_inline_import(
    user, tmp_path, fake_embedder, upload_dir, monkeypatch
):
    class BrokenPool:
        _max_workers = 1

        def submit(self, *args, **kwargs):
            raise BrokenProcessPool("worker killed")

        def shutdown(self, **kwargs):
            pass

    monkeypatch.setattr(import_conversations, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(import_conversations, "_worker_pool", lambda: BrokenPool())
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])

    job = _run(user, path)

    assert job.files.get().status == "imported"
    assert _chunks(user).count() == 3


@pytest.mark.parametrize("pooled", [False, True], ids=["inline", "in-pool"])
def test_verification_flags_a_stored_chunk_that_no_longer_parses(
    user, tmp_path, fake_embedder, upload_dir, pooled
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])
    job = _run(user, path)
    broken = _chunks(user).order_by("id").first()
    metadata = dict(broken.metadata)
    del metadata["turn_range"]
    MemoryItem.objects.filter(id=broken.id).update(metadata=metadata)
    MemoryItem.objects.filter(id=_chunks(user).order_by("id").last().id).delete()

    if pooled:
        with ThreadPoolExecutor(max_workers=2) as pool:
            report = verification.import_job_verify(job=job, pool=pool)
    else:
        report = verification.import_job_verify(job=job)

    assert report["ok"] is False
    assert report["unparseable"] == [broken.chunk_id]
    assert (report["chunks_reported"], report["chunks_found"]) == (3, 2)


def test_an_abandoned_running_job_is_resumed_but_a_live_one_is_left_alone(
    user, tmp_path, fake_embedder, upload_dir
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])
    job = import_job_create_from_paths(user=user, paths=[path])
    ImportJob.objects.filter(id=job.id).update(status="running", heartbeat_at=timezone.now())

    assert import_job_run(job_id=job.id).status == "running"  # another worker has it
    assert _chunks(user).count() == 0

    stale = timezone.now() - jobs.STALE_AFTER - timedelta(minutes=1)
    ImportJob.objects.filter(id=job.id).update(heartbeat_at=stale)
    resumed = import_job_run(job_id=job.id)

    assert resumed.status == "done" and resumed.attempts == 1
    assert _chunks(user).count() == 3


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_imports_of_the_same_export_store_it_once(
    user, tmp_path, fake_embedder, upload_dir
):
    conversations = [chatgpt_linear(f"T{n}", EXCHANGES, conversation_id=f"c{n}") for n in range(5)]
    first = write_json(tmp_path / "first.json", conversations)
    second = tmp_path / "second.json"  # same conversations, different bytes: no hash shortcut
    second.write_text(json.dumps(conversations, indent=1))
    jobs = [import_job_create_from_paths(user=user, paths=[p]) for p in (first, second)]
    results = {}

    def run(job_id):
        try:
            results[job_id] = import_job_run(job_id=job_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(job.id,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    files = [results[job.id].files.get() for job in jobs]
    assert sorted(f.status for f in files) == ["imported", "imported"]
    assert sorted(f.chunks_written for f in files) == [0, 15]
    assert _chunks(user).count() == 15
