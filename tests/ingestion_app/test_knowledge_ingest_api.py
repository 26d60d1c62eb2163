"""POST /api/v1/knowledge/ingest: text or files in, offset-tracked embedded chunks out."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingestion_app.models import Document, MemoryItem

pytestmark = pytest.mark.django_db

ARTICLE = (
    "Sourdough basics. A starter is flour and water fermented by wild yeast. "
    "Feed the starter daily with equal weights of flour and water.\n\n"
    "Baking day. Mix the dough, rest it, fold it, and shape it before the final proof. "
    "Bake in a hot Dutch oven for forty minutes.\n\n"
    "Tax filing. Freelancers in the Netherlands file VAT returns every quarter. "
    "Income tax is filed once a year before the first of May."
)


def _ingest(api, **payload):
    return api.post("/api/v1/knowledge/ingest", payload, format="json")


def test_text_is_chunked_with_offsets_metadata_and_embeddings(api, user, fake_embedder):
    response = _ingest(
        api,
        text=ARTICLE,
        filename="bread.md",
        options={
            "strategy": "paragraph",
            "max_chunk_size": 200,
            "min_chunk_size": 50,
            "overlap": 0,
        },
    )

    assert response.status_code == 201
    body = response.json()
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
def test_every_strategy_is_available(api, strategy, fake_embedder):
    response = _ingest(
        api, text=ARTICLE, options={"strategy": strategy, "max_chunk_size": 150, "overlap": 20}
    )

    assert response.status_code == 201
    chunks = response.json()["chunks"]
    assert len(chunks) >= 2 and {c["strategy"] for c in chunks} == {strategy}
    assert all(len(c["content"]) <= 150 + 20 for c in chunks)


def test_same_document_twice_returns_the_existing_one(api, user, fake_embedder):
    first = _ingest(api, text=ARTICLE)
    second = _ingest(api, text=ARTICLE)

    assert second.status_code == 200 and second.json()["created"] is False
    assert second.json()["document_id"] == first.json()["document_id"]
    assert Document.objects.filter(user=user).count() == 1


def test_secrets_are_redacted_but_offsets_point_at_the_original(api, user, fake_embedder):
    text = "Contact me at jane.doe@example.com for the report.\n\nThe report covers Q3 revenue."

    body = _ingest(api, text=text, options={"max_chunk_size": 60, "min_chunk_size": 10}).json()

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
def test_files_are_extracted_by_type(api, fake_embedder, name, data, expected_type, expected_text):
    upload = SimpleUploadedFile(name, data, content_type="application/octet-stream")

    response = api.post(
        "/api/v1/knowledge/ingest",
        {"file": upload, "options": json.dumps({"strategy": "paragraph"})},
        format="multipart",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["mime_type"] == expected_type
    assert body["chunks"][0]["content"] == expected_text
    assert body["filename"] == name


def test_bad_requests_are_refused_with_the_field(api, fake_embedder):
    assert _ingest(api).json()["error"]["field"] == "text"
    bad_strategy = _ingest(api, text="x" * 200, options={"strategy": "random"})
    assert bad_strategy.status_code == 400 and bad_strategy.json()["error"]["field"] == "options"
    bad_size = _ingest(api, text="x" * 200, options={"max_chunk_size": "big"})
    assert bad_size.status_code == 400 and bad_size.json()["error"]["field"] == "options"
    blank = _ingest(api, text="   ")
    assert blank.status_code == 400


def test_embedding_failure_stores_nothing(api, user, fake_embedder):
    fake_embedder.fail_count = 10

    response = _ingest(api, text=ARTICLE)

    assert response.status_code == 502
    assert not Document.objects.filter(user=user).exists()
    assert not MemoryItem.objects.filter(user=user).exists()
