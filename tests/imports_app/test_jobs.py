"""Import jobs: per-file outcomes, atomic failure, run once, resume, concurrent imports."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from imports_app.models import ImportedConversation, ImportFile, ImportJob
from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from tests.imports_app.helpers import EXCHANGES, import_chunks, run_import
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    claude_conversation,
    write_json,
)

pytestmark = pytest.mark.django_db


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

    job = run_import(user, good, broken, other)

    by_name = {f.name: f for f in job.files.all()}
    assert by_name["a-good.json"].status == "imported"
    assert by_name["c-claude.json"].status == "imported"
    failed = by_name["b-broken.json"]
    assert failed.status == "failed" and "truncated or invalid JSON" in failed.error
    assert failed.chunks_written == 0 and failed.chunk_ids == []
    titles = set(import_chunks(user).values_list("metadata__conversation_title", flat=True))
    assert not any(str(t).startswith("Broken") for t in titles)
    assert not ImportedConversation.objects.filter(title__startswith="Broken").exists()
    assert job.status == "partial"  # never "done" while a file failed
    assert job.error == "1 of 3 files failed; see each file's error"
    assert job.summary["errors"]["count"] == 1
    assert job.summary["errors"]["files"][0]["name"] == "b-broken.json"
    assert "re-export" in job.summary["errors"]["files"][0]["recovery"]


def test_unrecognized_files_are_skipped_with_the_reason(user, tmp_path, fake_embedder, upload_dir):
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list: milk, eggs")

    job = run_import(user, notes)

    [manifest] = job.files.all()
    assert (manifest.status, manifest.error) == ("skipped", "unrecognized format")
    assert job.summary["files_skipped"]["files"] == [
        {"name": "notes.txt", "reason": "unrecognized format"}
    ]
    # Nothing was imported: the job says so instead of reading as a success.
    assert job.status == "failed"
    assert job.error.startswith("nothing imported: the file is not a chat export Mnemo reads")


def test_a_file_whose_conversations_have_no_usable_turns_is_skipped_with_the_reason(
    user, tmp_path, fake_embedder, upload_dir
):
    blank = claude_conversation("Blank", [("human", ""), ("assistant", "")])
    path = write_json(tmp_path / "conversations.json", [blank])

    job = run_import(user, path)

    [manifest] = job.files.all()
    assert manifest.status == "skipped"
    assert manifest.error.startswith("1 conversation skipped ('Blank'): no message with text")
    assert job.summary["files_skipped"]["count"] == 1
    assert not import_chunks(user).exists()


def test_conversations_without_usable_turns_never_fail_the_file(
    user, tmp_path, fake_embedder, upload_dir
):
    good = claude_conversation("Kyoto", [("human", "Which pass?"), ("assistant", "JR Pass.")])
    odd = claude_conversation("Odd", [("human", "Hi"), ("assistant", "Hello")])
    for message in odd["chat_messages"]:
        message["content"] = json.dumps(message["content"])
        message["attachments"] = message["files"] = "[]"
    empty = claude_conversation("Empty", [])
    path = write_json(tmp_path / "conversations.json", [good, empty, odd])

    job = run_import(user, path)

    [manifest] = job.files.all()
    assert (manifest.status, manifest.conversations, manifest.turn_pairs) == ("imported", 2, 2)
    assert manifest.error.startswith("1 conversation skipped ('Empty')")
    assert import_chunks(user).count() == 2


def test_job_runs_once_even_if_delivered_twice(user, tmp_path, fake_embedder, upload_dir):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])
    job = import_job_create_from_paths(user=user, paths=[path])

    first = import_job_run(job_id=job.id)
    second = import_job_run(job_id=job.id)

    assert first.status == second.status == "done"
    assert import_chunks(user).count() == 3
    assert ImportFile.objects.filter(job=job).count() == 1


def test_embedder_failure_fails_the_file_atomically(user, tmp_path, fake_embedder, upload_dir):
    fake_embedder.fail_count = 100
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])

    job = run_import(user, path)

    [manifest] = job.files.all()
    assert manifest.status == "failed" and "model provider failed" in manifest.error
    assert import_chunks(user).count() == 0
    assert not ImportedConversation.objects.filter(user=user).exists()
    assert "recoverable" in job.summary["errors"]["files"][0]["recovery"]


def test_an_abandoned_running_job_is_resumed_but_a_live_one_is_left_alone(
    user, tmp_path, fake_embedder, upload_dir
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])
    job = import_job_create_from_paths(user=user, paths=[path])
    ImportJob.objects.filter(id=job.id).update(status="running", heartbeat_at=timezone.now())

    assert import_job_run(job_id=job.id).status == "running"  # another worker has it
    assert import_chunks(user).count() == 0

    expired = timezone.now() - timedelta(seconds=settings.MNEMO_JOB_LEASE_SECONDS + 1)
    ImportJob.objects.filter(id=job.id).update(heartbeat_at=expired)
    resumed = import_job_run(job_id=job.id)

    assert resumed.status == "done" and resumed.attempts == 1
    assert import_chunks(user).count() == 3


def test_the_periodic_task_hands_an_abandoned_job_to_a_worker_and_leaves_live_ones(
    user, tmp_path, fake_embedder, upload_dir
):
    """With the Redis broker a killed worker's task is gone: the schedule queues it again."""
    from imports_app.tasks import imports_resume_abandoned_task

    live_path = write_json(tmp_path / "live.json", [chatgpt_linear("Live", EXCHANGES)])
    live = import_job_create_from_paths(user=user, paths=[live_path])
    ImportJob.objects.filter(id=live.id).update(status="running", heartbeat_at=timezone.now())
    dead_path = write_json(
        tmp_path / "dead.json", [chatgpt_linear("Dead", EXCHANGES, conversation_id="dead")]
    )
    dead = import_job_create_from_paths(user=user, paths=[dead_path])
    stale = timezone.now() - timedelta(seconds=settings.MNEMO_JOB_LEASE_SECONDS + 1)
    ImportJob.objects.filter(id=dead.id).update(status="running", heartbeat_at=stale)

    assert imports_resume_abandoned_task()["imports"] == 1  # tasks run inline in tests

    dead.refresh_from_db()
    live.refresh_from_db()
    assert (dead.status, dead.attempts) == ("done", 1)
    assert live.status == "running"
    assert import_chunks(user).count() == 3
    assert imports_resume_abandoned_task()["imports"] == 0


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
    assert import_chunks(user).count() == 15


def _rag_store_vacuums() -> tuple[int, int]:
    """(manual VACUUMs of rag_store so far, its pages marked all-visible)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT s.vacuum_count, c.relallvisible FROM pg_stat_user_tables AS s
               JOIN pg_class AS c ON c.oid = s.relid WHERE s.relname = 'rag_store'"""
        )
        return cursor.fetchone()


@pytest.mark.django_db(transaction=True)
def test_a_large_import_leaves_the_memory_table_vacuumed_and_analyzed(
    user, tmp_path, fake_embedder, upload_dir, monkeypatch
):
    # The first searches after an import must not pay for it (hint bits, visibility map,
    # the planner's row count): a job over the threshold ends with VACUUM (ANALYZE), ...
    monkeypatch.setattr("imports_app.services.jobs.IMPORT_VACUUM_MIN_CHUNKS", 6)
    vacuums, _ = _rag_store_vacuums()
    small = write_json(tmp_path / "small.json", [chatgpt_linear("Small", EXCHANGES)])
    assert run_import(user, small).summary["chunks_generated"] < 6
    assert _rag_store_vacuums()[0] == vacuums  # ... a job under it leaves that to autovacuum
    large = write_json(
        tmp_path / "large.json",
        [chatgpt_linear(f"T{n}", EXCHANGES, conversation_id=f"c{n}") for n in range(3)],
    )
    job = run_import(user, large)
    assert job.status == "done" and job.summary["chunks_generated"] >= 6
    after, all_visible_pages = _rag_store_vacuums()
    assert after == vacuums + 1 and all_visible_pages >= 1
