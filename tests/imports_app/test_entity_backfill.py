"""The entities of an import: extracted after the file commits, in resumable batches."""

from __future__ import annotations

import pytest

from entities_app.models import Entity, EntityMention
from imports_app.models import ImportFile
from imports_app.services.entity_backfill import (
    import_file_entities_backfill,
    import_files_entities_resume,
)
from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from ingestion_app.models import MemoryItem
from tests.ingestion_app.export_builders import chatgpt_linear, write_json

pytestmark = pytest.mark.django_db

FAMILY = [
    ("My sister Ines is getting married in Lisbon next June.", "Congratulations to Ines!"),
    ("Our dog Max chewed the wedding invitations.", "Max sounds like a handful."),
    ("Ines asked me to give a speech at the wedding.", "Start with a story about Ines."),
    ("I am flying from Berlin on Friday.", "Have a good flight."),
    ("I had coffee with Marco yesterday.", "Nice."),
]


def _import(user, tmp_path, capture, exchanges=FAMILY, *, execute=True):
    path = write_json(tmp_path / "conversations.json", [chatgpt_linear("Family", exchanges)])
    job = import_job_create_from_paths(user=user, paths=[path])
    with capture(execute=execute) as callbacks:
        import_job_run(job_id=job.id, embed=False)
    return ImportFile.objects.get(job=job), callbacks


def test_entities_of_an_import_appear_once_its_file_is_committed(
    user, tmp_path, settings, django_capture_on_commit_callbacks, upload_dir
):
    settings.LLM_PROVIDER = "local"
    import_file, _ = _import(user, tmp_path, django_capture_on_commit_callbacks)

    assert import_file.entities_extracted == import_file.chunks_written == 5
    ines = Entity.objects.get(user=user, normalized_name="ines")
    assert (ines.type, ines.mention_count) == ("person", 2)
    assert "my sister" in ines.aliases
    assert Entity.objects.get(user=user, normalized_name="max").type == "pet"
    assert Entity.objects.get(user=user, normalized_name="lisbon").type == "place"
    # The chunk's bucket counts its entities once they are known: no cue word but a person.
    chunk = MemoryItem.objects.get(chunk_id=import_file.chunk_ids[4])
    assert "Marco" in chunk.content and chunk.bucket == "PERSONAL_LIFE"


def test_the_import_itself_stores_no_entity(
    user, tmp_path, settings, django_capture_on_commit_callbacks, upload_dir
):
    settings.LLM_PROVIDER = "local"
    import_file, callbacks = _import(
        user, tmp_path, django_capture_on_commit_callbacks, execute=False
    )

    assert import_file.status == "imported" and import_file.chunks_written == 5
    assert not Entity.objects.filter(user=user).exists()
    assert import_file.entities_extracted == 0
    # Until the backfill ran, a chunk's bucket is chosen by its cue words alone.
    assert MemoryItem.objects.get(chunk_id=import_file.chunk_ids[4]).bucket == "OTHER"
    assert callbacks  # the backfill is queued when the file commits


def test_backfill_resumes_where_it_stopped_and_a_rerun_changes_nothing(
    user, tmp_path, settings, django_capture_on_commit_callbacks, upload_dir
):
    settings.LLM_PROVIDER = "local"
    import_file, _ = _import(user, tmp_path, django_capture_on_commit_callbacks, execute=False)
    # A worker stopped after committing its first batch (the first two chunks).
    ImportFile.objects.filter(id=import_file.id).update(entities_extracted=2)

    assert import_file_entities_backfill(import_file_id=import_file.id, batch_size=2) == 3
    names = set(Entity.objects.filter(user=user).values_list("normalized_name", flat=True))
    assert {"ines", "berlin"} <= names and not {"max", "lisbon"} & names
    assert import_file_entities_backfill(import_file_id=import_file.id) == 0

    # Running the whole file again (a repeated batch) adds the missing chunks only.
    ImportFile.objects.filter(id=import_file.id).update(entities_extracted=0)
    assert import_file_entities_backfill(import_file_id=import_file.id, batch_size=3) == 5
    mentions = EntityMention.objects.filter(user=user).count()
    ines = Entity.objects.get(user=user, normalized_name="ines")
    ImportFile.objects.filter(id=import_file.id).update(entities_extracted=0)
    assert import_file_entities_backfill(import_file_id=import_file.id) == 5
    assert EntityMention.objects.filter(user=user).count() == mentions
    ines.refresh_from_db()
    assert ines.mention_count == 2  # chunks 1 and 3, each counted once
    import_file.refresh_from_db()
    assert import_file.entities_extracted == 5


def test_an_unfinished_backfill_is_queued_again_by_the_resume_schedule(
    user, tmp_path, settings, django_capture_on_commit_callbacks, upload_dir
):
    settings.LLM_PROVIDER = "local"
    import_file, _ = _import(user, tmp_path, django_capture_on_commit_callbacks, execute=False)
    assert import_files_entities_resume() == 0  # just imported: its own task is on the way

    ImportFile.objects.filter(id=import_file.id).update(processed_at="2020-01-01T00:00:00Z")
    assert import_files_entities_resume() == 1  # the synchronous test broker runs it now

    import_file.refresh_from_db()
    assert import_file.entities_extracted == 5
    assert Entity.objects.filter(user=user, normalized_name="ines").exists()
    assert import_files_entities_resume() == 0


def test_entities_of_an_import_never_reach_another_user(
    user, other_user, tmp_path, settings, django_capture_on_commit_callbacks, upload_dir
):
    settings.LLM_PROVIDER = "local"
    _import(user, tmp_path, django_capture_on_commit_callbacks)

    assert not Entity.objects.filter(user=other_user).exists()
    assert Entity.objects.filter(user=user, normalized_name="ines").exists()
