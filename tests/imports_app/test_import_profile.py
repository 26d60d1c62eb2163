"""An imported export teaches the profile what its user turns state, dated when said."""

from __future__ import annotations

import pytest

from imports_app.models import ImportFile
from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from ingestion_app.models import MemoryItem
from profile_app.models import ProfileEntry
from profile_app.services.profile import profile_import_read, profile_rebuild
from tests.ingestion_app.export_builders import BASE_TS, chatgpt_linear, write_json

pytestmark = pytest.mark.django_db

EXCHANGES = [
    ("I'm setting up a Flask app. Always use type hints in Python examples.", "Sure."),
    ("The assistant should be brief. I prefer SQLite for prototypes.", "Noted."),
    ("Always answer in German.", "Alles klar."),
    ("From now on, answer in English instead.", "Okay."),
]


def test_an_import_fills_the_profile_in_the_order_things_were_said(
    user, tmp_path, upload_dir, django_capture_on_commit_callbacks
):
    path = write_json(tmp_path / "conversations.json", [chatgpt_linear("Flask", EXCHANGES)])
    job = import_job_create_from_paths(user=user, paths=[path])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        import_job_run(job_id=job.id, embed=False)
    import_file = ImportFile.objects.get(job=job)
    assert len(callbacks) >= 2  # the entities and the profile are read after the commit

    made = profile_import_read(import_file_id=import_file.id)

    active = ProfileEntry.objects.filter(user=user, status="active")
    assert made == 5
    assert sorted(active.values_list("text", flat=True)) == [
        "Always use type hints in Python examples.",
        "From now on, answer in English instead.",
        "I prefer SQLite for prototypes.",
        "Working on: a Flask app",
    ]
    german = ProfileEntry.objects.get(user=user, text="Always answer in German.")
    assert german.status == "superseded" and german.origin == "import"
    assert german.source_memory_id is not None
    # The date is when it was said in the export, not the import's.
    assert german.stated_at < german.superseded_by.stated_at
    assert german.stated_at.timestamp() < BASE_TS + 3600
    # Reading the file again adds nothing.
    assert profile_import_read(import_file_id=import_file.id) == 0


def test_a_rebuild_reads_the_users_turns_of_an_import_never_the_assistants_passages(
    user, tmp_path, upload_dir
):
    """A long reply is also stored as passages of its own; the assistant's "Remember to always
    back up…" is advice, not the user's standing instruction, on either path."""
    advice = " ".join(
        f"Step {n}: check the migration plan against the staging copy before you run it."
        for n in range(40)
    )
    reply = f"{advice} Remember to always back up the database before you migrate it."
    exchanges = [("I prefer SQLite for prototypes. How do I migrate my schema?", reply)]
    path = write_json(tmp_path / "conversations.json", [chatgpt_linear("Schema", exchanges)])
    job = import_job_run(job_id=import_job_create_from_paths(user=user, paths=[path]).id)
    assert MemoryItem.objects.filter(user=user, metadata__granularity="passage").exists()
    profile_import_read(import_file_id=ImportFile.objects.get(job=job).id)
    imported = sorted(ProfileEntry.objects.filter(user=user).values_list("kind", "text"))

    profile_rebuild(user=user, app_id="default")

    rebuilt = sorted(ProfileEntry.objects.filter(user=user).values_list("kind", "text"))
    assert imported == [("preference", "I prefer SQLite for prototypes.")]
    assert rebuilt == imported
