"""Zip archives of an import job: checked against the caps, opened into member manifest rows,
never trusted as paths.

The caps (MNEMO_ARCHIVE_MAX_BYTES, _MAX_ENTRIES, _MAX_RATIO) are checked twice: on the central
directory before anything is written (``archive_check``: an upload is refused with 413/400
before it reaches the upload folder), and on the bytes actually inflated while members are
extracted, since the sizes an archive declares can lie; a member that goes over is cut off, the
archive's extracted files are deleted and the archive fails with the reason.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings
from django.utils import timezone

from imports_app.models import ImportFile, ImportJob
from ingestion_app.parsers import (
    CONVERSATION_FORMATS,
    ZIP,
    detect_format,
)
from ingestion_app.parsers.detect import HEAD_BYTES
from memory_site.errors import InvalidInput, PayloadTooLarge

ARCHIVE_MAX_DEPTH = 2
_ARCHIVE_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")
UNRECOGNIZED = "unrecognized format"


class ArchiveRejected(Exception):
    """An archive over a cap, or with an unsafe member; ``too_large`` picks 413 over 400."""

    def __init__(self, message: str, *, too_large: bool) -> None:
        super().__init__(message)
        self.too_large = too_large

    def as_domain_error(self, *, field: str = "files") -> InvalidInput | PayloadTooLarge:
        if self.too_large:
            return PayloadTooLarge(str(self), code="archive_too_large", field=field)
        return InvalidInput(str(self), code="archive_unsafe", field=field)


def _unsafe_member(info: zipfile.ZipInfo) -> str:
    """Why a member may not be extracted ('' if it may): traversal, absolute path, symlink."""
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or (len(name) > 1 and name[1] == ":") or ".." in parts:
        return f"member {info.filename!r} points outside the archive (path traversal)"
    if stat.S_ISLNK(info.external_attr >> 16):
        return f"member {info.filename!r} is a symbolic link"
    return ""


def archive_check(source: str | Path | IO[bytes], *, name: str = "archive") -> None:
    """Check a zip's central directory against the caps and for unsafe members.

    Raises ArchiveRejected; reads only the directory (no member is inflated). A file that is
    not a valid zip is left to the import, which reports it as a corrupt archive.
    """
    max_bytes = settings.MNEMO_ARCHIVE_MAX_BYTES
    max_entries = settings.MNEMO_ARCHIVE_MAX_ENTRIES
    max_ratio = settings.MNEMO_ARCHIVE_MAX_RATIO
    try:
        bundle = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError):
        return
    with bundle:
        members = bundle.infolist()
        if len(members) > max_entries:
            raise ArchiveRejected(
                f"{name} has {len(members)} entries; the limit is {max_entries} "
                "(MNEMO_ARCHIVE_MAX_ENTRIES)",
                too_large=True,
            )
        total = 0
        for info in members:
            reason = _unsafe_member(info)
            if reason:
                raise ArchiveRejected(f"{name}: {reason}", too_large=False)
            total += info.file_size
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > 1024 * 1024 and ratio > max_ratio:
                raise ArchiveRejected(
                    f"{name}: member {info.filename!r} expands {ratio:.0f} times; the limit is "
                    f"{max_ratio} (MNEMO_ARCHIVE_MAX_RATIO)",
                    too_large=True,
                )
        if total > max_bytes:
            raise ArchiveRejected(
                f"{name} expands to {total} bytes; the limit is {max_bytes} "
                "(MNEMO_ARCHIVE_MAX_BYTES)",
                too_large=True,
            )


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
    try:
        archive_check(archive.path, name=archive.name)
    except ArchiveRejected as exc:
        archive.status = ImportFile.Status.FAILED
        archive.error = str(exc)
        return
    directory = job_dir(job)
    directory.mkdir(parents=True, exist_ok=True)
    rows: list[ImportFile] = []
    written: list[Path] = []
    budget = _InflateBudget()
    try:
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
                    written.append(target)
                    digest = hashlib.sha256()
                    with bundle.open(info) as handle, open(target, "wb") as out:
                        while block := handle.read(1 << 20):
                            budget.take(info, len(block), archive_name=archive.name)
                            digest.update(block)
                            out.write(block)
                    # The member's own date stands in for missing timestamps, not the upload
                    # time.
                    stamp = datetime(*info.date_time).timestamp()
                    os.utime(target, (stamp, stamp))
                    row.path = str(target)
                    row.content_hash = digest.hexdigest()
                else:
                    row.status = ImportFile.Status.SKIPPED
                    row.error = UNRECOGNIZED
                    row.processed_at = timezone.now()
                rows.append(row)
    except ArchiveRejected as exc:
        for path in written:
            path.unlink(missing_ok=True)
        archive.status = ImportFile.Status.FAILED
        archive.error = str(exc)
        return
    ImportFile.objects.bulk_create(rows, batch_size=500)
    if rows:
        archive.status = ImportFile.Status.IMPORTED
        archive.error = ""
    else:
        archive.status = ImportFile.Status.SKIPPED
        archive.error = "empty archive"


class _InflateBudget:
    """The caps applied to the bytes actually inflated (an archive's declared sizes can lie)."""

    def __init__(self) -> None:
        self.total = 0
        self.member: zipfile.ZipInfo | None = None
        self.member_bytes = 0

    def take(self, info: zipfile.ZipInfo, count: int, *, archive_name: str) -> None:
        if info is not self.member:
            self.member, self.member_bytes = info, 0
        self.member_bytes += count
        self.total += count
        if self.member_bytes > info.file_size:
            raise ArchiveRejected(
                f"{archive_name}: member {info.filename!r} inflates past its declared size",
                too_large=True,
            )
        if self.total > settings.MNEMO_ARCHIVE_MAX_BYTES:
            raise ArchiveRejected(
                f"{archive_name} expands past {settings.MNEMO_ARCHIVE_MAX_BYTES} bytes "
                "(MNEMO_ARCHIVE_MAX_BYTES)",
                too_large=True,
            )
