"""Document ingest with hostile files and fields: a 4xx with the envelope, never a 500.

The cases came from the schema fuzzer and a probe of the upload path (a UTF-16 byte-order mark
with a cut-off character, broken PDFs, out-of-range chunking options). What needs no parsing is
a 400 at once; a file that does not read as its type fails its job with the reason.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingestion_app.models import Document, DocumentIngestJob

pytestmark = pytest.mark.django_db

# (name, bytes, content type, POST status, the job's final status)
FILES = [
    ("cut-utf16.txt", b"\xff\xfe\x00", "text/plain", 202, "done"),
    ("broken.pdf", b"%PDF-1.4 garbage", "application/pdf", 202, "failed"),
    ("bytes.pdf", b"\x00\x01\x02", "application/pdf", 202, "failed"),
    ("broken.json", b"{", "application/json", 202, "failed"),
    ("blank.txt", b"  \n\t ", "text/plain", 202, "failed"),
    ("empty.txt", b"", "text/plain", 400, None),
]


@pytest.mark.parametrize("name,data,content_type,status,job_status", FILES)
def test_hostile_uploads_are_answered_without_a_500(
    api,
    fake_embedder,
    upload_dir,
    django_capture_on_commit_callbacks,
    name,
    data,
    content_type,
    status,
    job_status,
):
    """The content is read by the worker: an unreadable file fails its job with the reason."""
    api.raise_request_exception = True
    upload = SimpleUploadedFile(name, data, content_type=content_type)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/knowledge/ingest", {"file": upload}, format="multipart")
    assert response.status_code == status, response.content
    if status == 400:
        assert set(response.json()["error"]) >= {"code", "message"}
        assert not DocumentIngestJob.objects.exists()
        return
    job = api.get(response.json()["status_url"]).json()
    assert job["status"] == job_status, job
    if job_status == "failed":
        assert job["error"]["code"] == "document_unreadable" and job["error"]["message"]
        assert job["result"] is None
        assert not Document.objects.exists()
        assert not list((upload_dir / "ingest").iterdir())  # the payload is gone


def test_a_json_text_body_that_does_not_parse_fails_its_job(
    api, fake_embedder, upload_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/api/v1/knowledge/ingest", {"text": "{", "mime_type": "application/json"}
        )
    assert response.status_code == 202
    job = api.get(response.json()["status_url"]).json()
    assert job["status"] == "failed" and job["error"]["code"] == "document_unreadable"
    assert "invalid JSON" in job["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"text": "hello", "mime_type": "application/pdf"},
        {"text": "   ", "mime_type": "text/markdown"},
        {"text": "hello world", "options": {"chunk_size": 10**30}},
        {"text": "hello world", "options": {"chunk_size": -5}},
        {"text": "hello world", "options": {"overlap": 10**6, "chunk_size": 10}},
    ],
)
def test_hostile_json_fields_are_400(api, fake_embedder, upload_dir, body):
    api.raise_request_exception = True
    response = api.post("/api/v1/knowledge/ingest", body, format="json")
    assert response.status_code == 400, response.content
    assert not Document.objects.exists()
