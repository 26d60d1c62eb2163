"""POST /api/v1/knowledge/ingest: text or files in, a job out that ends with offset-tracked,
embedded chunks (GET /api/v1/knowledge/ingest/<job_id>)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingestion_app.models import Document, DocumentIngestJob, MemoryItem

pytestmark = pytest.mark.django_db

ARTICLE = (
    "Sourdough basics. A starter is flour and water fermented by wild yeast. "
    "Feed the starter daily with equal weights of flour and water.\n\n"
    "Baking day. Mix the dough, rest it, fold it, and shape it before the final proof. "
    "Bake in a hot Dutch oven for forty minutes.\n\n"
    "Tax filing. Freelancers in the Netherlands file VAT returns every quarter. "
    "Income tax is filed once a year before the first of May."
)


@pytest.fixture
def ingest(api, django_capture_on_commit_callbacks, upload_dir):
    """POST a document, let the queued task run, and return the POST response with the job's
    final state (``response.job``)."""

    def post(format="json", **payload):
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/v1/knowledge/ingest", payload, format=format)
        response.job = None
        if response.status_code == 202:
            response.job = api.get(response.json()["status_url"]).json()
        return response

    return post


def test_text_is_chunked_with_offsets_metadata_and_embeddings(ingest, user, fake_embedder):
    response = ingest(
        text=ARTICLE,
        filename="bread.md",
        options={
            "strategy": "paragraph",
            "max_chunk_size": 200,
            "min_chunk_size": 50,
            "overlap": 0,
        },
    )

    assert response.status_code == 202
    assert response.job["status"] == "done"
    assert response.job["progress"] == {"chunks_done": 3, "chunks_total": 3}
    body = response.job["result"]
    assert body["created"] is True and body["chunk_count"] == 3
    assert [c["index"] for c in body["chunks"]] == [0, 1, 2]
    for chunk in body["chunks"]:
        assert ARTICLE[chunk["start_offset"] : chunk["end_offset"]] == chunk["content"]
        assert chunk["strategy"] == "paragraph"
        assert chunk["metadata"]["total_chunks"] == 3
        assert chunk["metadata"]["document_id"] == body["document_id"]
        assert chunk["metadata"]["mime_type"] == "text/markdown"
    stored = MemoryItem.objects.filter(user=user, source="document")
    assert stored.count() == 3 and all(item.embedding is not None for item in stored)
    assert len(fake_embedder.bodies("/embeddings")) == 1  # one batch


@pytest.mark.parametrize("strategy", ["sentence", "fixed", "semantic"])
def test_every_strategy_is_available(ingest, strategy, fake_embedder):
    response = ingest(
        text=ARTICLE, options={"strategy": strategy, "max_chunk_size": 150, "overlap": 20}
    )

    assert response.status_code == 202
    chunks = response.job["result"]["chunks"]
    assert len(chunks) >= 2 and {c["strategy"] for c in chunks} == {strategy}
    assert all(len(c["content"]) <= 150 + 20 for c in chunks)


def test_same_document_twice_returns_the_existing_one(ingest, user, fake_embedder):
    first = ingest(text=ARTICLE)
    second = ingest(text=ARTICLE)

    assert second.job["status"] == "done" and second.job["result"]["created"] is False
    assert second.job["result"]["document_id"] == first.job["result"]["document_id"]
    assert Document.objects.filter(user=user).count() == 1


def test_secrets_are_redacted_but_offsets_point_at_the_original(ingest, user, fake_embedder):
    text = "Contact me at jane.doe@example.com for the report.\n\nThe report covers Q3 revenue."

    body = ingest(text=text, options={"max_chunk_size": 60, "min_chunk_size": 10}).job["result"]

    first = body["chunks"][0]
    assert "[EMAIL]" in first["content"] and "jane.doe" not in first["content"]
    assert text[first["start_offset"] : first["end_offset"]].startswith("Contact me at jane.doe")
    stored = MemoryItem.objects.get(id=first["id"])
    assert "jane.doe@example.com" in stored.raw_content
    assert "jane.doe" not in fake_embedder.all_text_sent()


def _pdf(text: str) -> bytes:
    """A minimal one-page PDF with ``text`` in Helvetica."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


@pytest.mark.parametrize(
    ("name", "data", "expected_type", "expected_text"),
    [
        (
            "notes.txt",
            b"Plain notes about tides.\r\nSecond line.",
            "text/plain",
            "Plain notes about tides.\nSecond line.",
        ),
        (
            "page.html",
            b"<html><body><h1>Tides</h1><p>The moon pulls.</p><script>x()</script></body></html>",
            "text/html",
            "# Tides\n\nThe moon pulls.",
        ),
        (
            "data.json",
            b'{"tide":"high","time":"06:00"}',
            "application/json",
            '{\n  "tide": "high",\n  "time": "06:00"\n}',
        ),
        (
            "paper.pdf",
            _pdf("Tides are caused by the moon."),
            "application/pdf",
            "Tides are caused by the moon.",
        ),
    ],
)
def test_files_are_extracted_by_type(
    ingest, fake_embedder, name, data, expected_type, expected_text
):
    upload = SimpleUploadedFile(name, data, content_type="application/octet-stream")

    response = ingest(
        format="multipart", file=upload, options=json.dumps({"strategy": "paragraph"})
    )

    assert response.status_code == 202, response.json()
    body = response.job["result"]
    assert body["mime_type"] == expected_type
    assert body["chunks"][0]["content"] == expected_text
    assert body["filename"] == name


def test_a_pdf_is_read_by_the_worker_not_in_the_request(
    api, user, fake_embedder, upload_dir, monkeypatch
):
    """The request stores the PDF's bytes and answers 202; pypdf runs only in the task."""
    from ingestion_app.services import documents as documents_service
    from ingestion_app.tasks import document_ingest_job_task

    real_extract = documents_service.extract_text
    extracted = []

    def recording_extract(data, *, kind):
        extracted.append(kind)
        return real_extract(data, kind=kind)

    monkeypatch.setattr(documents_service, "extract_text", recording_extract)
    upload = SimpleUploadedFile(
        "paper.pdf", _pdf("Tides are caused by the moon."), content_type="application/pdf"
    )

    response = api.post("/api/v1/knowledge/ingest", {"file": upload}, format="multipart")

    assert response.status_code == 202 and response.json()["status"] == "queued"
    assert extracted == []
    stored = list((upload_dir / "ingest").iterdir())
    assert [path.read_bytes()[:5] for path in stored] == [b"%PDF-"]
    document_ingest_job_task(response.json()["job_id"])
    job = api.get(response.json()["status_url"]).json()
    assert extracted == ["application/pdf"]
    assert job["status"] == "done"
    assert job["result"]["chunks"][0]["content"] == "Tides are caused by the moon."


def test_a_broken_pdf_fails_its_job_with_the_reason(ingest, user, fake_embedder, upload_dir):
    upload = SimpleUploadedFile(
        "scan.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 50, content_type="application/pdf"
    )

    response = ingest(format="multipart", file=upload)

    assert response.status_code == 202
    assert response.job["status"] == "failed"
    assert response.job["error"]["code"] == "document_unreadable"
    assert "cannot read the PDF" in response.job["error"]["message"]
    assert not Document.objects.filter(user=user).exists()
    assert not fake_embedder.bodies("/embeddings")
    assert not list((upload_dir / "ingest").iterdir())


def test_bad_requests_are_refused_with_the_field(ingest, user, fake_embedder):
    assert ingest().json()["error"]["field"] == "text"
    bad_strategy = ingest(text="x" * 200, options={"strategy": "random"})
    assert bad_strategy.status_code == 400 and bad_strategy.json()["error"]["field"] == "options"
    bad_size = ingest(text="x" * 200, options={"max_chunk_size": "big"})
    assert bad_size.status_code == 400 and bad_size.json()["error"]["field"] == "options"
    blank = ingest(text="   ")
    assert blank.status_code == 400
    assert not DocumentIngestJob.objects.filter(user=user).exists()


def test_embedding_failure_fails_the_job_and_stores_nothing(ingest, user, fake_embedder):
    fake_embedder.fail_count = 10

    response = ingest(text=ARTICLE)

    assert response.status_code == 202
    assert response.job["status"] == "failed"
    assert response.job["error"]["code"] == "embedding_failed"
    assert not Document.objects.filter(user=user).exists()
    assert not MemoryItem.objects.filter(user=user).exists()


def test_the_answer_comes_before_the_work(api, user, fake_embedder, upload_dir):
    """202 with a queued job while nothing has been chunked or embedded; the task does it."""
    from ingestion_app.tasks import document_ingest_job_task

    response = api.post("/api/v1/knowledge/ingest", {"text": ARTICLE}, format="json")

    assert response.status_code == 202
    job = response.json()
    assert job["status"] == "queued" and job["result"] is None
    assert not fake_embedder.bodies("/embeddings")
    assert not MemoryItem.objects.filter(user=user).exists()
    document_ingest_job_task(job["job_id"])
    done = api.get(job["status_url"]).json()
    assert done["status"] == "done" and done["result"]["chunk_count"] >= 1
    assert not list((upload_dir / "ingest").iterdir())  # the payload is gone once done


def test_too_large_a_document_is_413_and_writes_nothing(api, user, settings, upload_dir):
    settings.MNEMO_MAX_DOCUMENT_BYTES = 1000

    as_text = api.post("/api/v1/knowledge/ingest", {"text": "x" * 1001}, format="json")
    upload = SimpleUploadedFile("big.txt", b"y" * 1001, content_type="text/plain")
    as_file = api.post("/api/v1/knowledge/ingest", {"file": upload}, format="multipart")

    assert as_text.status_code == 413 and as_text.json()["error"]["field"] == "text"
    assert as_file.status_code == 413 and as_file.json()["error"]["field"] == "file"
    assert not DocumentIngestJob.objects.exists()
    assert not (upload_dir / "ingest").exists() or not list((upload_dir / "ingest").iterdir())


def test_cancel_stops_the_work_between_batches(api, user, fake_embedder, settings, upload_dir):
    """A DELETE while the worker embeds: no further batch is sent and nothing is stored."""
    from ingestion_app.services import documents as documents_service
    from ingestion_app.tasks import document_ingest_job_task

    settings.EMBEDDING_BATCH_SIZE = 1
    three_chunks = {"max_chunk_size": 200, "min_chunk_size": 50}
    job = api.post(
        "/api/v1/knowledge/ingest", {"text": ARTICLE, "options": three_chunks}, format="json"
    ).json()
    real_embed = documents_service.memory_items_embed
    batches = []

    def embed_then_cancel(items):
        batches.append(len(items))
        real_embed(items)
        if len(batches) == 1:  # the user cancels while the first batch is being embedded
            assert api.delete(job["status_url"]).json()["status"] == "cancelled"

    documents_service.memory_items_embed = embed_then_cancel
    try:
        document_ingest_job_task(job["job_id"])
    finally:
        documents_service.memory_items_embed = real_embed

    assert batches == [1]
    final = api.get(job["status_url"]).json()
    assert final["status"] == "cancelled" and final["progress"]["chunks_done"] == 0
    assert final["progress"]["chunks_total"] == 3
    assert not Document.objects.filter(user=user).exists()
    assert not MemoryItem.objects.filter(user=user).exists()


def test_another_users_job_is_404(api, other_api, fake_embedder, upload_dir):
    job = api.post("/api/v1/knowledge/ingest", {"text": ARTICLE}, format="json").json()

    assert other_api.get(job["status_url"]).status_code == 404
    assert other_api.delete(job["status_url"]).status_code == 404
    assert api.get(job["status_url"]).json()["status"] == "queued"
