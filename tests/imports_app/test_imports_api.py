"""POST /api/v1/imports and GET /api/v1/imports/<id>."""

from __future__ import annotations

import io
import json
import uuid
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingestion_app.models import MemoryItem
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    claude_conversation,
    gemini_record,
)

pytestmark = pytest.mark.django_db


def _file(name: str, data) -> SimpleUploadedFile:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return SimpleUploadedFile(name, raw, content_type="application/octet-stream")


def _post(api, files, capture, **fields):
    with capture(execute=True):
        return api.post("/api/v1/imports", {"files": files, **fields}, format="multipart")


CHATGPT = [
    chatgpt_linear(
        "Trip planning",
        [("Plan three days in Kyoto", "Day 1: temples."), ("Where to eat ramen?", "Ichiran.")],
    )
]


def test_upload_is_accepted_and_processed_by_the_task(
    api, django_capture_on_commit_callbacks, fake_embedder, upload_dir
):
    response = _post(
        api, [_file("conversations.json", CHATGPT)], django_capture_on_commit_callbacks
    )

    assert response.status_code == 202
    import_id = response.json()["import_id"]
    detail = api.get(f"/api/v1/imports/{import_id}")
    assert detail.status_code == 200
    body = detail.json()
    assert body["status"] == "done"
    assert body["files"] == [
        {
            "name": "conversations.json",
            "format": "chatgpt",
            "status": "imported",
            "conversations": 1,
            "turn_pairs": 2,
            "chunks_written": 2,
            "entities_extracted": 2,  # the entity backfill ran after the file
            "passage_vectors_pending": False,  # short replies: no passages to embed
            "duplicates_skipped": 0,
            "size_bytes": body["files"][0]["size_bytes"],
            "content_hash": body["files"][0]["content_hash"],
            "error": "",
            "processed_at": body["files"][0]["processed_at"],
        }
    ]
    assert body["summary"]["chunks_generated"] == 2
    assert body["summary"]["verification"]["ok"] is True
    assert not any(upload_dir.rglob("*.upload"))  # uploaded bytes removed after processing


def test_several_files_each_get_a_manifest_row(
    api, django_capture_on_commit_callbacks, fake_embedder, upload_dir
):
    files = [
        _file("conversations.json", CHATGPT),
        _file(
            "claude.json",
            [
                claude_conversation(
                    "DNS", [("human", "What is DNS?"), ("assistant", "Names to IPs.")]
                )
            ],
        ),
        _file(
            "MyActivity.json", [gemini_record("Weather?", "<p>Sunny</p>", "2024-05-01T10:00:00Z")]
        ),
        _file("photo.png", b"\x89PNG\r\n\x1a\n binary"),
    ]

    response = _post(api, files, django_capture_on_commit_callbacks)

    body = api.get(f"/api/v1/imports/{response.json()['import_id']}").json()
    assert [(f["name"], f["format"], f["status"]) for f in body["files"]] == [
        ("conversations.json", "chatgpt", "imported"),
        ("claude.json", "claude", "imported"),
        ("MyActivity.json", "gemini_json", "imported"),
        ("photo.png", "", "skipped"),
    ]
    assert body["files"][3]["error"] == "unrecognized format"
    assert body["summary"]["files_skipped"]["count"] == 1


def test_an_export_cut_off_before_its_keys_fails_with_the_reason(
    api, django_capture_on_commit_callbacks, fake_embedder, upload_dir
):
    whole = json.dumps(CHATGPT).encode()
    files = [
        _file("conversations.json", whole[:20]),  # cut before any key says "ChatGPT"
        _file("notes.json", {"shopping": ["milk"]}),  # whole, just not an export
        # Whole JSON Lines of a chat format not read (SillyTavern): unknown, not broken.
        _file(
            "Megumin.jsonl",
            b'{"user_name":"You","character_name":"Megumin"}\n{"name":"You","mes":"hi"}\n',
        ),
    ]

    response = _post(api, files, django_capture_on_commit_callbacks)

    body = api.get(f"/api/v1/imports/{response.json()['import_id']}").json()
    cut, other, lines = body["files"]
    assert cut["status"] == "failed"
    assert cut["error"].startswith("truncated or invalid JSON")
    assert (other["status"], other["error"]) == ("skipped", "unrecognized format")
    assert (lines["status"], lines["error"]) == ("skipped", "unrecognized format")
    assert not MemoryItem.objects.exists()


def test_a_zip_archive_is_opened_and_its_members_imported(
    api, django_capture_on_commit_callbacks, fake_embedder, upload_dir
):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("conversations.json", json.dumps(CHATGPT))
        archive.writestr("user.json", json.dumps({"id": "user-1", "email": "x@y.z"}))
        archive.writestr("chat.html", "<html><body>viewer</body></html>")
        archive.writestr(
            "Takeout/My Activity/Gemini Apps/MyActivity.json",
            json.dumps(
                [gemini_record("Hi Gemini, plan a picnic", "<p>Sure</p>", "2024-05-01T10:00:00Z")]
            ),
        )

    response = _post(
        api, [_file("export.zip", buffer.getvalue())], django_capture_on_commit_callbacks
    )

    body = api.get(f"/api/v1/imports/{response.json()['import_id']}").json()
    statuses = {f["name"]: (f["format"], f["status"]) for f in body["files"]}
    assert statuses == {
        "export.zip/conversations.json": ("chatgpt", "imported"),
        "export.zip/user.json": ("", "skipped"),
        "export.zip/chat.html": ("", "skipped"),
        "export.zip/Takeout/My Activity/Gemini Apps/MyActivity.json": ("gemini_json", "imported"),
    }
    assert body["summary"]["chunks_generated"] == 3


def test_reimport_through_the_api_writes_zero_chunks(
    api, user, django_capture_on_commit_callbacks, fake_embedder, upload_dir
):
    _post(api, [_file("conversations.json", CHATGPT)], django_capture_on_commit_callbacks)
    count = MemoryItem.objects.filter(user=user).count()

    response = _post(
        api, [_file("conversations.json", CHATGPT)], django_capture_on_commit_callbacks
    )

    body = api.get(f"/api/v1/imports/{response.json()['import_id']}").json()
    assert body["files"][0]["chunks_written"] == 0
    assert body["files"][0]["duplicates_skipped"] == 2
    assert body["summary"]["chunks_generated"] == 0
    assert MemoryItem.objects.filter(user=user).count() == count


def test_corrupt_zip_is_reported_as_failed(
    api, django_capture_on_commit_callbacks, fake_embedder, upload_dir
):
    response = _post(
        api,
        [_file("broken.zip", b"PK\x03\x04 this is not a real archive")],
        django_capture_on_commit_callbacks,
    )

    body = api.get(f"/api/v1/imports/{response.json()['import_id']}").json()
    assert [(f["name"], f["status"]) for f in body["files"]] == [("broken.zip", "failed")]
    assert "corrupt archive" in body["files"][0]["error"]


def test_upload_without_files_is_refused(api, upload_dir):
    response = api.post("/api/v1/imports", {}, format="multipart")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "files"


def test_another_users_import_is_not_found(
    api, other_api, django_capture_on_commit_callbacks, fake_embedder, upload_dir
):
    response = _post(api, [_file("c.json", CHATGPT)], django_capture_on_commit_callbacks)

    assert other_api.get(f"/api/v1/imports/{response.json()['import_id']}").status_code == 404
    assert api.get(f"/api/v1/imports/{uuid.uuid4()}").status_code == 404


def test_anonymous_upload_is_refused(anon_api, upload_dir):
    response = anon_api.post(
        "/api/v1/imports", {"files": [_file("c.json", CHATGPT)]}, format="multipart"
    )

    assert response.status_code == 401  # token auth answers first: WWW-Authenticate: Token
