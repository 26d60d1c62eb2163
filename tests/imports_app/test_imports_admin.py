"""The admin upload form for chat exports, and the job page it leads to."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from imports_app.models import ImportJob
from ingestion_app.models import MemoryItem
from tests.ingestion_app.export_builders import chatgpt_linear

pytestmark = pytest.mark.django_db


def test_staff_uploads_exports_for_a_user(
    staff_client, user, django_capture_on_commit_callbacks, fake_embedder, upload_dir
):
    export = chatgpt_linear("Kyoto", [("Plan three days in Kyoto", "Day 1: temples.")])
    files = [
        SimpleUploadedFile("conversations.json", json.dumps([export]).encode()),
        SimpleUploadedFile("notes.txt", b"not an export"),
    ]

    form = staff_client.get("/admin/imports_app/importjob/upload/")
    assert form.status_code == 200 and b"Upload chat exports" in form.content
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/admin/imports_app/importjob/upload/",
            {"user": user.id, "files": files, "agent_id": "external", "project_id": ""},
        )

    job = ImportJob.objects.get(user=user)
    assert response.status_code == 302 and str(job.id) in response["Location"]
    assert job.origin == "admin" and job.status == "done"
    assert MemoryItem.objects.filter(user=user, source="chunk").count() == 1
    page = staff_client.get(response["Location"])
    assert page.status_code == 200
    assert b"conversations.json" in page.content and b"unrecognized format" in page.content
    listing = staff_client.get("/admin/imports_app/importjob/")
    assert b"Upload chat exports" in listing.content


def test_upload_form_requires_files(staff_client, user, upload_dir):
    response = staff_client.post(
        "/admin/imports_app/importjob/upload/", {"user": user.id, "agent_id": "external"}
    )

    assert response.status_code == 200
    assert not ImportJob.objects.exists()


def test_non_staff_cannot_reach_the_upload_form(client, user, upload_dir):
    client.force_login(user)

    response = client.get("/admin/imports_app/importjob/upload/")

    assert response.status_code == 302 and "/admin/login/" in response["Location"]
