"""Archive caps: bombs, too many entries, traversal and symlink members are refused before
anything is written (API 413/400, the upload page, the CLI); uploads are deleted after the job."""

from __future__ import annotations

import io
import json
import stat
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from imports_app.models import ImportJob
from imports_app.services import archives
from tests.imports_app.helpers import EXCHANGES, import_chunks, run_import
from tests.ingestion_app.export_builders import chatgpt_linear

pytestmark = pytest.mark.django_db

EXPORT = json.dumps([chatgpt_linear("Trip", EXCHANGES)]).encode()


def _zip(members: dict[str, bytes], *, symlink: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            bundle.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def _bomb() -> bytes:
    """A ~40 KB zip that inflates to 40 MiB (ratio ~1000)."""
    return _zip({"conversations.json": b"[" + b" " * (40 * 1024 * 1024) + b"]"})


def _files_under(path) -> list:
    return [p for p in path.rglob("*") if p.is_file()] if path.exists() else []


def _post(api, name: str, data: bytes):
    upload = SimpleUploadedFile(name, data, content_type="application/zip")
    return api.post("/api/v1/imports", {"files": [upload]}, format="multipart")


def test_a_zip_bomb_is_413_and_nothing_is_written(api, upload_dir):
    bomb = _bomb()
    assert len(bomb) < 100_000

    response = _post(api, "export.zip", bomb)

    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "archive_too_large" and error["field"] == "files"
    assert "MNEMO_ARCHIVE_MAX_RATIO" in error["message"]
    assert not ImportJob.objects.exists()
    assert _files_under(upload_dir) == []


def test_total_size_and_entry_count_are_capped(api, settings, upload_dir):
    settings.MNEMO_ARCHIVE_MAX_BYTES = len(EXPORT) * 2
    too_big = _post(api, "big.zip", _zip({f"{n}.json": EXPORT for n in range(3)}))
    settings.MNEMO_ARCHIVE_MAX_BYTES = 10**9
    settings.MNEMO_ARCHIVE_MAX_ENTRIES = 3
    too_many = _post(api, "many.zip", _zip({f"{n}.json": b"{}" for n in range(4)}))

    assert (
        too_big.status_code == 413
        and "MNEMO_ARCHIVE_MAX_BYTES" in too_big.json()["error"]["message"]
    )
    assert too_many.status_code == 413
    assert "MNEMO_ARCHIVE_MAX_ENTRIES" in too_many.json()["error"]["message"]
    assert not ImportJob.objects.exists() and _files_under(upload_dir) == []


@pytest.mark.parametrize(
    ("members", "symlink", "reason"),
    [
        ({"../../outside.json": EXPORT}, "", "path traversal"),
        ({"/etc/cron.d/x.json": EXPORT}, "", "path traversal"),
        ({"conversations.json": EXPORT}, "link.json", "symbolic link"),
    ],
)
def test_traversal_and_symlink_members_are_400(api, upload_dir, members, symlink, reason):
    response = _post(api, "export.zip", _zip(members, symlink=symlink))

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "archive_unsafe"
    assert reason in response.json()["error"]["message"]
    assert not ImportJob.objects.exists() and _files_under(upload_dir) == []


def test_the_upload_page_refuses_a_bomb_with_the_reason(client, user, upload_dir):
    client.force_login(user)

    response = client.post(
        "/memories/imports/", {"files": [SimpleUploadedFile("export.zip", _bomb())]}
    )

    assert response.status_code == 413
    assert "MNEMO_ARCHIVE_MAX_RATIO" in response.content.decode()
    assert not ImportJob.objects.exists() and _files_under(upload_dir) == []


def test_a_local_bomb_fails_its_archive_without_extracting(user, tmp_path, upload_dir):
    path = tmp_path / "export.zip"
    path.write_bytes(_bomb())

    job = run_import(user, path)

    [archive] = job.files.all()
    assert archive.status == "failed" and "MNEMO_ARCHIVE_MAX_RATIO" in archive.error
    assert job.status == "failed"
    assert _files_under(upload_dir) == []


def test_inflated_bytes_are_counted_even_when_the_directory_lies(
    user, tmp_path, upload_dir, settings, fake_embedder, monkeypatch
):
    """The caps hold on the bytes actually inflated: a directory that passes the check (here
    the check is skipped) still cannot write past MNEMO_ARCHIVE_MAX_BYTES."""
    monkeypatch.setattr(archives, "archive_check", lambda *args, **kwargs: None)
    settings.MNEMO_ARCHIVE_MAX_BYTES = len(EXPORT) + 10
    path = tmp_path / "export.zip"
    path.write_bytes(_zip({"a.json": EXPORT, "b.json": EXPORT}))

    job = run_import(user, path)

    [archive] = job.files.all()
    assert archive.status == "failed" and "expands past" in archive.error
    assert _files_under(upload_dir) == []
    assert import_chunks(user).count() == 0


def test_uploads_are_deleted_after_the_import_unless_kept(
    api, settings, upload_dir, fake_embedder, django_capture_on_commit_callbacks
):
    archive = _zip({"conversations.json": EXPORT})
    with django_capture_on_commit_callbacks(execute=True):
        first = _post(api, "export.zip", archive)
    assert first.status_code == 202
    assert api.get(f"/api/v1/imports/{first.json()['import_id']}").json()["status"] == "done"
    assert _files_under(upload_dir) == []

    settings.MNEMO_KEEP_UPLOADS = True
    with django_capture_on_commit_callbacks(execute=True):
        kept = _post(api, "again.zip", _zip({"other.json": EXPORT + b" "}))
    assert kept.status_code == 202
    assert len(_files_under(upload_dir)) >= 1
