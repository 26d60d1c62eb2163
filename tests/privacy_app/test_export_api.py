"""GET /api/v1/me/export: every row the caller owns, in one JSON document, and nobody else's."""

from __future__ import annotations

import json

import pytest

from privacy_app.services.user_data import user_owned_models
from sessions_app.models import Message
from tests.privacy_app.userdata import fill_every_owned_table

pytestmark = pytest.mark.django_db


@pytest.fixture
def upload_root(settings, tmp_path):
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    return settings.MNEMO_UPLOAD_DIR


def test_export_holds_every_owned_row_and_nothing_of_others(api, user, other_user, upload_root):
    expected = fill_every_owned_table(user, marker="alicemark")
    fill_every_owned_table(other_user, marker="bobmark")
    (upload_root / str(user.pk)).mkdir(parents=True)
    (upload_root / str(user.pk) / "export.zip").write_bytes(b"12345")

    response = api.get("/api/v1/me/export")

    assert response.status_code == 200
    document = response.json()
    text = json.dumps(document)
    assert "bobmark" not in text
    counts = document["export"]["counts"]
    # Every model that can own rows is in the export, with exactly the caller's row count.
    assert set(counts) == {owned.label for owned in user_owned_models()}
    assert counts == expected
    assert all(count > 0 for count in counts.values()), counts
    assert document["user"]["username"] == "alice"
    assert document["files"] == [{"path": f"{user.pk}/export.zip", "bytes": 5}]


def test_export_sections_read_like_the_data(api, user, upload_root):
    fill_every_owned_table(user, marker="alicemark")
    document = api.get("/api/v1/me/export").json()

    original = Message.objects.filter(user=user, role="user").first()
    exported = {m["id"]: m for m in document["messages"]}[original.id]
    # The user's own data: the original text (decrypted) next to the redacted copy.
    assert exported["content"] == "alicemark: reach me at alicemark@example.com"
    assert "alicemark@example.com" not in exported["content_sanitized"]
    assert len(document["sessions"]) == 1
    session_id = document["sessions"][0]["id"]
    assert exported["session_id"] == session_id
    assert {m["session_id"] for m in document["messages"]} == {session_id}

    facts = [m for m in document["memories"] if m["source"] == "fact"]
    fact = next(m for m in facts if m["content"] == "alicemark likes hiking")
    assert [h["event"] for h in fact["history"]] == ["ADD"]
    chunk = next(c for c in document["chunks"] if c["chunk_id"] == "chunk-alicemark")
    assert chunk["raw_content"] == "alicemark raw original"
    for key in ("summaries", "tags", "topics", "usage", "memory_history"):
        assert document[key], key


def test_export_leaves_out_credentials_and_vectors(api, user, upload_root):
    fill_every_owned_table(user, marker="alicemark")
    document = api.get("/api/v1/me/export").json()
    text = json.dumps(document)
    assert "password" not in document["user"]
    assert user.password not in text
    assert user.auth_token.key not in text
    assert "whsec_alicemark" not in text  # a webhook's signing secret
    assert all("embedding" not in row for row in document["memories"] + document["chunks"])
    omitted = document["export"]["omitted_fields"]
    assert "embedding" in omitted["ingestion_app.MemoryItem"]
    assert "key" in omitted["authtoken.Token"]


def test_export_of_a_new_user_is_empty_but_well_formed(api, upload_root):
    document = api.get("/api/v1/me/export").json()
    for key in ("sessions", "messages", "summaries", "tags", "memories", "chunks", "topics"):
        assert document[key] == []
    assert document["export"]["format"] == "mnemo.export"
    assert document["files"] == []


def test_export_needs_authentication(anon_api):
    response = anon_api.get("/api/v1/me/export")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
