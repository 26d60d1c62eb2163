"""DELETE /api/v1/me: after a confirmed erasure no row, vector or file of the caller is left."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from context_app.models import TopicOverride
from imports_app.models import ImportJob
from ingestion_app.models import MemoryItem
from privacy_app.services.user_data import user_owned_models
from sessions_app.models import ChatSession, RetentionLog
from tests.privacy_app.userdata import fill_every_owned_table, tables_mentioning, user_fk_columns

pytestmark = pytest.mark.django_db


@pytest.fixture
def upload_root(settings, tmp_path):
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    return settings.MNEMO_UPLOAD_DIR


def rows_referencing(user_pk) -> dict[str, int]:
    found = {}
    with connection.cursor() as cursor:
        for table, column in user_fk_columns():
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}" = %s', [user_pk])
            count = cursor.fetchone()[0]
            if count:
                found[f"{table}.{column}"] = count
    return found


def test_missing_or_wrong_confirmation_erases_nothing(api, user):
    fill_every_owned_table(user, marker="alicemark")
    for body, code in [
        ({}, "confirmation_required"),
        ({"confirm": "bob"}, "confirmation_mismatch"),
    ]:
        response = api.delete("/api/v1/me", body, format="json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == code
        assert response.json()["error"]["field"] == "confirm"
    response = api.delete("/api/v1/me", {"confirm": ["alice"]}, format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "confirm"
    assert get_user_model().objects.filter(pk=user.pk).exists()
    assert rows_referencing(user.pk)


def test_erasure_leaves_no_row_vector_or_file(
    api, user, other_user, upload_root, django_capture_on_commit_callbacks
):
    fill_every_owned_table(user, marker="alicemark")
    bob_before = fill_every_owned_table(other_user, marker="bobmark")
    alice_dir = upload_root / str(user.pk)
    (alice_dir / "job1").mkdir(parents=True)
    (alice_dir / "job1" / "chatgpt.zip").write_bytes(b"zip bytes")
    staged = upload_root / "staging" / "job-2"
    staged.mkdir(parents=True)
    (staged / "conversations.json").write_text("[]")
    ImportJob.objects.filter(user=user).update(upload_dir=str(staged))
    (upload_root / str(other_user.pk)).mkdir(parents=True)
    (upload_root / str(other_user.pk) / "keep.txt").write_text("bob's")
    alice_sessions = [
        str(s) for s in ChatSession.objects.filter(user=user).values_list("id", flat=True)
    ]
    bob_sessions = [
        str(s) for s in ChatSession.objects.filter(user=other_user).values_list("id", flat=True)
    ]
    RetentionLog.objects.create(
        cutoff="2025-01-01T00:00Z", retention_days=30, session_ids=alice_sessions + bob_sessions
    )
    assert tables_mentioning("alicemark")

    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete("/api/v1/me", {"confirm": "alice"}, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["erased"] is True
    assert body["files_deleted"] == 2
    assert body["deleted"]["sessions_app.Message"] == 2
    assert body["rows_deleted"] == sum(body["deleted"].values())

    # No row anywhere points at the user or carries their text.
    assert rows_referencing(user.pk) == {}
    assert not get_user_model().objects.filter(pk=user.pk).exists()
    assert tables_mentioning("alicemark") == {}
    for owned in user_owned_models():
        assert owned.rows_of(user.pk).count() == 0, owned.label
    assert not MemoryItem.objects.filter(embedding__isnull=False, user_id=user.pk).exists()
    assert RetentionLog.objects.get().session_ids == bob_sessions
    # No file either; another user's files stay.
    assert not alice_dir.exists() and not staged.exists()
    assert (upload_root / str(other_user.pk) / "keep.txt").read_text() == "bob's"

    # Everyone else is untouched.
    assert {o.label: o.rows_of(other_user.pk).count() for o in user_owned_models()} == bob_before

    # The token went with the account.
    assert api.get("/api/v1/me/export").status_code == 401


def test_erasure_with_no_data_removes_the_account(api, user, upload_root):
    response = api.delete("/api/v1/me", {"confirm": "alice"}, format="json")
    assert response.status_code == 200
    assert not get_user_model().objects.filter(pk=user.pk).exists()
    assert rows_referencing(user.pk) == {}


def test_erasure_clears_references_from_other_users_rows(api, user, other_user, upload_root):
    """A SET_NULL reference (an admin's `created_by`) is cleared, the other user's row stays."""
    override = TopicOverride.objects.create(user=other_user, title="Travel", created_by=user)
    response = api.delete("/api/v1/me", {"confirm": "alice"}, format="json")
    assert response.status_code == 200
    override.refresh_from_db()
    assert override.created_by_id is None
    assert override.user_id == other_user.pk
