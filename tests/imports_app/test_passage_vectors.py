"""The passages of an import: stored without vectors when the file commits (findable by their
words at once), embedded by a task queued after it, resumed when that task's worker died."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from django_q.conf import Conf

from imports_app.models import ImportFile
from imports_app.services import passage_vectors
from imports_app.services.entity_backfill import import_file_entities_backfill
from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from imports_app.services.passage_vectors import (
    import_file_passage_vectors,
    import_files_passage_vectors_resume,
)
from imports_app.tasks import import_passage_vectors_task
from ingestion_app.models import MemoryItem
from memory_site.db_locks import advisory_lock_key
from retrieval.search import memory_search
from tests.ingestion_app.export_builders import chatgpt_linear, write_json

pytestmark = pytest.mark.django_db

FACT = "the pressure valve on the Acme X200 is factory set to 2.4 bar"
# A reply long enough to be cut into passages, the fact in the middle of it.
LONG_REPLY = " ".join(
    [f"Step {n}: check the loop, bleed the radiators and note the gauge." for n in range(12)]
    + [f"Remember that {FACT}; never adjust it yourself."]
    + [f"Step {n}: refill slowly and write the readings down." for n in range(12, 24)]
)
EXCHANGES = [
    ("Can you give me a checklist for my Acme X200 boiler?", LONG_REPLY),
    ("Thanks. Anything about the condensate pipe?", "Keep it running downhill to the drain."),
]


def _passages(user):
    return MemoryItem.objects.filter(user=user, metadata__granularity="passage")


def _import(user, tmp_path, capture, *, embed=True):
    path = write_json(tmp_path / "conversations.json", [chatgpt_linear("Boiler", EXCHANGES)])
    job = import_job_create_from_paths(user=user, paths=[path])
    with capture(execute=False) as callbacks:
        import_job_run(job_id=job.id, embed=embed)
    return ImportFile.objects.get(job=job), callbacks


def test_the_file_commits_with_chunk_vectors_and_its_passages_are_embedded_after_it(
    user, tmp_path, fake_embedder, django_capture_on_commit_callbacks, upload_dir
):
    import_file, callbacks = _import(user, tmp_path, django_capture_on_commit_callbacks)

    assert import_file.status == "imported" and import_file.passage_vectors_pending
    chunks = MemoryItem.objects.filter(user=user, chunk_id__in=import_file.chunk_ids)
    assert chunks.count() == 2 and not chunks.filter(embedding__isnull=True).exists()
    assert _passages(user).count() > 2
    assert not _passages(user).filter(embedding__isnull=False).exists()
    # Until its vector comes, the passage holding the fact is found by its words.
    found = memory_search(user=user, query="Acme X200 pressure valve bar", max_tokens=None)
    assert any(FACT in hit.content and len(hit.content) < 700 for hit in found.items)

    for callback in callbacks:  # the file's queued tasks run, as a worker would
        callback()

    import_file.refresh_from_db()
    assert not import_file.passage_vectors_pending
    assert not MemoryItem.objects.filter(user=user, embedding__isnull=True).exists()
    by_meaning = memory_search(
        user=user, query="Acme X200 pressure valve bar", mode="semantic", max_tokens=None
    )
    assert any(FACT in hit.content and len(hit.content) < 700 for hit in by_meaning.items)
    assert import_file_passage_vectors(import_file_id=import_file.id) == 0  # nothing twice


def test_a_backfill_whose_worker_died_is_queued_again_and_resumes(
    user, tmp_path, fake_embedder, django_capture_on_commit_callbacks, upload_dir
):
    import_file, _ = _import(user, tmp_path, django_capture_on_commit_callbacks)
    # A worker stopped after its first batch: one passage has its vector, kept as it is.
    first = _passages(user).order_by("id").first()
    kept = MemoryItem.objects.get(chunk_id=import_file.chunk_ids[0]).embedding
    MemoryItem.objects.filter(id=first.id).update(embedding=kept)
    assert import_files_passage_vectors_resume() == 0  # just imported: its own task is on the way

    ImportFile.objects.filter(id=import_file.id).update(processed_at="2020-01-01T00:00:00Z")
    # A batch written five minutes ago: its task is still at work, and is left alone.
    ImportFile.objects.filter(id=import_file.id).update(
        passage_vectors_at=timezone.now() - timedelta(minutes=5)
    )
    assert import_files_passage_vectors_resume() == 0
    ImportFile.objects.filter(id=import_file.id).update(
        passage_vectors_at=timezone.now() - timedelta(minutes=11)
    )
    assert import_files_passage_vectors_resume() == 1  # the synchronous test broker runs it now

    import_file.refresh_from_db()
    assert not import_file.passage_vectors_pending
    assert not _passages(user).filter(embedding__isnull=True).exists()
    first.refresh_from_db()
    assert list(first.embedding) == list(kept)  # the batch done before is not done again
    assert import_files_passage_vectors_resume() == 0


def test_an_import_without_embeddings_leaves_its_passages_to_reembed(
    user, tmp_path, fake_embedder, django_capture_on_commit_callbacks, upload_dir
):
    import_file, callbacks = _import(
        user, tmp_path, django_capture_on_commit_callbacks, embed=False
    )

    for callback in callbacks:
        callback()

    import_file.refresh_from_db()
    assert not import_file.passage_vectors_pending
    assert _passages(user).count() > 2
    assert not MemoryItem.objects.filter(user=user, embedding__isnull=False).exists()


def test_a_big_file_is_embedded_by_a_chain_of_tasks_each_within_its_time(
    user,
    tmp_path,
    fake_embedder,
    django_capture_on_commit_callbacks,
    upload_dir,
    settings,
    monkeypatch,
):
    settings.EMBEDDING_BATCH_SIZE = 2
    monkeypatch.setattr(passage_vectors, "PASSAGE_VECTORS_TASK_SECONDS", 0.0)
    import_file, _ = _import(user, tmp_path, django_capture_on_commit_callbacks)
    passages = _passages(user).count()

    # One batch per task here; each queues the rest (run at once by the synchronous broker).
    assert import_passage_vectors_task(import_file.id) == 2

    import_file.refresh_from_db()
    assert not import_file.passage_vectors_pending and import_file.passage_vectors_at
    assert _passages(user).filter(embedding__isnull=False).count() == passages > 2


@pytest.fixture
def other_worker():
    """A second database connection, as another task worker holds one."""
    connection = connections.create_connection("default")
    yield connection
    connection.close()


def _hold(connection, name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [advisory_lock_key(name)])


def test_the_passage_vectors_and_the_entities_of_a_file_run_side_by_side(
    user, tmp_path, fake_embedder, django_capture_on_commit_callbacks, upload_dir, other_worker
):
    import_file, _ = _import(user, tmp_path, django_capture_on_commit_callbacks)

    # Another worker is extracting the file's entities: the passages are embedded all the same.
    _hold(other_worker, f"import-entities:{import_file.id}")
    assert import_file_passage_vectors(import_file_id=import_file.id) == _passages(user).count()
    import_file.refresh_from_db()
    assert not import_file.passage_vectors_pending

    # And the other way round: the entity backfill runs while the passages are embedded.
    other_worker.close()
    _hold(other_worker, f"import-passage-vectors:{import_file.id}")
    assert import_file_entities_backfill(import_file_id=import_file.id) == 2


def test_a_second_task_on_the_same_file_leaves_at_once(
    user, tmp_path, fake_embedder, django_capture_on_commit_callbacks, upload_dir, other_worker
):
    import_file, _ = _import(user, tmp_path, django_capture_on_commit_callbacks)
    _hold(other_worker, f"import-passage-vectors:{import_file.id}")

    assert import_file_passage_vectors(import_file_id=import_file.id) == 0
    import_file.refresh_from_db()
    assert import_file.passage_vectors_pending  # the first task is still at it
    assert not _passages(user).filter(embedding__isnull=False).exists()


@pytest.mark.django_db(transaction=True)
def test_a_file_row_locked_by_the_entity_backfill_does_not_stop_the_passage_vectors(
    user, tmp_path, fake_embedder, upload_dir, monkeypatch, other_worker
):
    # The tasks queued on commit wait in the broker (no worker here), as in a cluster.
    monkeypatch.setattr(Conf, "SYNC", False)
    path = write_json(tmp_path / "conversations.json", [chatgpt_linear("Boiler", EXCHANGES)])
    job = import_job_create_from_paths(user=user, paths=[path])
    import_job_run(job_id=job.id)
    import_file = ImportFile.objects.get(job=job)
    assert import_file.passage_vectors_pending

    # The entity backfill's batch holds the file row for a moment (its cursor is there).
    other_worker.set_autocommit(False)
    with other_worker.cursor() as cursor:
        cursor.execute("SELECT id FROM import_file WHERE id = %s FOR UPDATE", [import_file.id])
    release = threading.Timer(0.5, other_worker.connection.commit)  # the psycopg connection
    release.start()
    try:
        written = import_file_passage_vectors(import_file_id=import_file.id)
    finally:
        release.join()

    assert written == _passages(user).count() > 2
    import_file.refresh_from_db()
    assert not import_file.passage_vectors_pending
