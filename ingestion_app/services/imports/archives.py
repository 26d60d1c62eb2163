"""Zip archives of an import job: opened into member manifest rows, never trusted as paths."""

from __future__ import annotations

import hashlib
import os
import zipfile
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from ingestion_app.models import ImportFile, ImportJob
from ingestion_app.parsers import (
    CONVERSATION_FORMATS,
    ZIP,
    detect_format,
)
from ingestion_app.parsers.detect import HEAD_BYTES

ARCHIVE_MAX_DEPTH = 2
_ARCHIVE_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")
UNRECOGNIZED = "unrecognized format"


def job_dir(job: ImportJob) -> Path:
    return Path(settings.MNEMO_UPLOAD_DIR) / "imports" / str(job.id)


def archive_depth(import_file: ImportFile) -> int:
    depth = 0
    parent_id = import_file.archive_id
    while parent_id is not None and depth < 10:
        depth += 1
        parent_id = ImportFile.objects.filter(id=parent_id).values_list("archive_id", flat=True)[0]
    return depth


def archive_expand(*, archive: ImportFile, job: ImportJob, depth: int) -> None:
    """Turn a zip into member rows. Members are sniffed in the archive and only recognized
    exports (or nested archives) are extracted; paths inside the archive are never used as
    file system paths."""
    archive.is_archive = True
    if depth >= ARCHIVE_MAX_DEPTH:
        archive.status = ImportFile.Status.SKIPPED
        archive.error = "archive nested too deeply"
        return
    directory = job_dir(job)
    directory.mkdir(parents=True, exist_ok=True)
    rows: list[ImportFile] = []
    with zipfile.ZipFile(archive.path) as bundle:
        members = [
            info
            for info in bundle.infolist()
            if not info.is_dir() and not any(junk in info.filename for junk in _ARCHIVE_JUNK)
        ]
        for number, info in enumerate(members):
            name = f"{archive.name}/{info.filename}"[:1000]
            with bundle.open(info) as handle:
                head = handle.read(HEAD_BYTES)
            member_format = detect_format(head) or ""
            row = ImportFile(
                job=job,
                user=job.user,
                archive=archive,
                position=archive.position,
                name=name,
                size_bytes=info.file_size,
                format=member_format,
            )
            if member_format in CONVERSATION_FORMATS or member_format == ZIP:
                target = directory / f"{archive.id}-{number:05d}.member"
                digest = hashlib.sha256()
                with bundle.open(info) as handle, open(target, "wb") as out:
                    while block := handle.read(1 << 20):
                        digest.update(block)
                        out.write(block)
                # The member's own date stands in for missing timestamps, not the upload time.
                stamp = datetime(*info.date_time).timestamp()
                os.utime(target, (stamp, stamp))
                row.path = str(target)
                row.content_hash = digest.hexdigest()
            else:
                row.status = ImportFile.Status.SKIPPED
                row.error = UNRECOGNIZED
                row.processed_at = timezone.now()
            rows.append(row)
    ImportFile.objects.bulk_create(rows, batch_size=500)
    if rows:
        archive.status = ImportFile.Status.IMPORTED
        archive.error = ""
    else:
        archive.status = ImportFile.Status.SKIPPED
        archive.error = "empty archive"
