"""Sessions (summaries, tags, titles) and imports (upload, progress, processing summary)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from context_app.models import SessionSummary, SessionTag
from imports_app.models import ImportFile, ImportJob
from ingestion_app.models import MemoryItem
from tests.factories import add_message, open_session
from tests.web_app.helpers import chatgpt_export

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


def test_sessions_list_shows_titles_summaries_and_tags(client, user, other_user):
    session = open_session(user, title="Kyoto trip")
    add_message(session, "user", "Which rail pass for Kyoto?")
    SessionSummary.objects.create(
        session=session, user=user, summary="The user plans a Kyoto trip in April."
    )
    SessionTag.objects.create(session=session, user=user, tag="japan-rail-pass", confidence=0.9)
    untitled = open_session(user)
    add_message(untitled, "user", "How do I descale a kettle?")
    open_session(other_user, title="Bob's chat")
    client.force_login(user)

    html = client.get("/memories/sessions/").content.decode()

    assert "Kyoto trip" in html
    assert "The user plans a Kyoto trip in April." in html
    assert "japan-rail-pass" in html
    assert "How do I descale a kettle?" in html  # an untitled chat is named by its first line
    assert "Bob&#x27;s chat" not in html and "Bob's chat" not in html


def test_session_page_shows_transcript_summary_and_memories(client, user):
    session = open_session(user, title="Kyoto trip")
    add_message(session, "user", "I'm going to Kyoto in April.")
    SessionSummary.objects.create(session=session, user=user, summary="Trip to Kyoto in April.")
    fact = MemoryItem.objects.create(
        user=user, chat_session=session, source="fact", content="The user visits Kyoto in April."
    )
    client.force_login(user)

    html = client.get(f"/memories/sessions/{session.id}/").content.decode()

    assert "I&#x27;m going to Kyoto in April." in html
    assert "Trip to Kyoto in April." in html
    assert f"/memories/{fact.id}/" in html
    assert f"/chat/{session.id}/" in html


def test_upload_runs_the_import_and_shows_the_summary(
    client, user, django_capture_on_commit_callbacks
):
    export = chatgpt_export(
        "Sourdough help",
        [
            ("user", "My sourdough starter smells like acetone, is it dead?"),
            ("assistant", "No, it is hungry: feed it twice a day."),
            ("user", "How warm should the kitchen be for proofing?"),
            ("assistant", "Around 24-26 °C works well."),
        ],
    )
    client.force_login(user)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/memories/imports/",
            {"files": [SimpleUploadedFile("conversations.json", export)], "project_id": "baking"},
        )

    job = ImportJob.objects.get(user=user)
    assert response.status_code == 302
    assert response["Location"] == f"/memories/imports/{job.id}/"
    page = client.get(response["Location"])
    html = page.content.decode()
    assert page.context["job"].status == ImportJob.Status.DONE
    assert "Processing summary" in html
    assert "conversations.json" in html
    assert page.context["summary"]["chunks_generated"] >= 1
    assert 'hx-trigger="every 2s"' not in html  # finished: no more polling
    assert MemoryItem.objects.filter(user=user, source="chunk", project_id="baking").exists()
    listing = client.get("/memories/imports/").content.decode()
    assert f"/memories/imports/{job.id}/" in listing


def test_running_import_page_polls_for_progress(client, user):
    job = ImportJob.objects.create(user=user, status=ImportJob.Status.RUNNING)
    client.force_login(user)

    page = client.get(f"/memories/imports/{job.id}/")
    partial = client.get(f"/memories/imports/{job.id}/", HTTP_HX_REQUEST="true")

    assert 'hx-trigger="every 2s"' in page.content.decode()
    assert partial.content.decode().lstrip().startswith('<div id="import-status"')


def test_import_page_shows_the_entity_backfill_until_it_is_done(client, user):
    job = ImportJob.objects.create(user=user, status=ImportJob.Status.DONE)
    pending = ImportFile.objects.create(
        job=job, user=user, name="a.json", status="imported", chunks_written=10
    )
    ImportFile.objects.filter(id=pending.id).update(entities_extracted=4)
    ImportFile.objects.create(
        job=job,
        user=user,
        name="b.json",
        status="imported",
        chunks_written=3,
        entities_extracted=3,
        position=1,
    )
    client.force_login(user)

    html = client.get(f"/memories/imports/{job.id}/").content.decode()

    assert "entities: 4 of 10 read" in html
    assert "of 3 read" not in html  # b.json is done


def test_upload_without_files_says_what_to_do(client, user):
    client.force_login(user)
    response = client.post("/memories/imports/", {"project_id": "x"})
    assert response.status_code == 400
    assert "Choose at least one file to import." in response.content.decode()
    assert not ImportJob.objects.exists()
