"""Disk full while an upload is written: 507 with the envelope, nothing kept, no job."""

from __future__ import annotations

import errno
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from imports_app.models import ImportJob
from imports_app.services import jobs
from ingestion_app.models import DocumentIngestJob
from ingestion_app.services import document_jobs
from tests.imports_app.helpers import EXCHANGES
from tests.ingestion_app.export_builders import chatgpt_linear

pytestmark = pytest.mark.django_db

EXPORT = json.dumps([chatgpt_linear("Trip", EXCHANGES)]).encode()


class _FullDisk:
    """A file that takes the first write and then reports the disk full, as ENOSPC does."""

    def __init__(self, path, mode="r", *args, **kwargs):
        self.handle = open(path, mode, *args, **kwargs)  # noqa: SIM115 - closed in __exit__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")


def _files_under(path) -> list:
    return [p for p in path.rglob("*") if p.is_file()] if path.exists() else []


def test_an_import_upload_on_a_full_disk_is_507_and_leaves_nothing(api, upload_dir, monkeypatch):
    monkeypatch.setattr(jobs, "open", _FullDisk, raising=False)
    upload = SimpleUploadedFile("conversations.json", EXPORT)

    response = api.post("/api/v1/imports", {"files": [upload]}, format="multipart")

    assert response.status_code == 507
    assert response.json()["error"]["code"] == "storage_full"
    assert response["Retry-After"]
    assert not ImportJob.objects.exists() and _files_under(upload_dir) == []


def test_the_upload_page_on_a_full_disk_is_507(client, user, upload_dir, monkeypatch):
    monkeypatch.setattr(jobs, "open", _FullDisk, raising=False)
    client.force_login(user)
    client.raise_request_exception = False

    response = client.post(
        "/memories/imports/", {"files": [SimpleUploadedFile("conversations.json", EXPORT)]}
    )

    assert response.status_code == 507 and b"no space left" in response.content
    assert not ImportJob.objects.exists() and _files_under(upload_dir) == []


def test_a_document_on_a_full_disk_is_507_and_leaves_nothing(api, upload_dir, monkeypatch):
    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(document_jobs.Path, "write_bytes", full)

    response = api.post("/api/v1/knowledge/ingest", {"text": "Notes on tides."}, format="json")

    assert response.status_code == 507 and response.json()["error"]["code"] == "storage_full"
    assert not DocumentIngestJob.objects.exists() and _files_under(upload_dir) == []
