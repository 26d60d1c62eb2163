"""Document ingest with hostile files and fields: a 4xx with the envelope, never a 500.

The cases came from the schema fuzzer and a probe of the upload path (a UTF-16 byte-order mark
with a cut-off character, broken PDFs, out-of-range chunking options).
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingestion_app.models import Document

pytestmark = pytest.mark.django_db

FILES = [
    ("cut-utf16.txt", b"\xff\xfe\x00", "text/plain", 202),
    ("broken.pdf", b"%PDF-1.4 garbage", "application/pdf", 400),
    ("bytes.pdf", b"\x00\x01\x02", "application/pdf", 400),
    ("broken.json", b"{", "application/json", 400),
    ("empty.txt", b"", "text/plain", 400),
]


@pytest.mark.parametrize("name,data,content_type,status", FILES)
def test_hostile_uploads_are_answered_without_a_500(
    api, fake_embedder, upload_dir, name, data, content_type, status
):
    api.raise_request_exception = True
    upload = SimpleUploadedFile(name, data, content_type=content_type)
    response = api.post("/api/v1/knowledge/ingest", {"file": upload}, format="multipart")
    assert response.status_code == status, response.content
    if status == 400:
        assert set(response.json()["error"]) >= {"code", "message"}
        assert not Document.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"text": "hello", "mime_type": "application/pdf"},
        {"text": "{", "mime_type": "application/json"},
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
