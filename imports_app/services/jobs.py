"""Import jobs: creating them (uploads or local paths), claiming and running them."""

from __future__ import annotations

import gc
import hashlib
import logging
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import F, Prefetch, Q, Sum
from django.utils import timezone
from django_q.tasks import async_task

from imports_app.models import ImportFile, ImportJob
from imports_app.services.archives import (
    UNRECOGNIZED,
    ArchiveRejected,
    archive_check,
    job_dir,
)
from imports_app.services.conversations import (
    ImportProgress,
    JobWorkers,
    children_allowed,
    import_file_process,
)
from imports_app.services.verification import import_job_summary
from ingestion_app.services.memory_store import memory_store_vacuum
from memory_site.errors import InvalidInput, NotFound
from memory_site.leases import LeaseKeeper, lease_expired_before, lease_held
from memory_site.task_paths import IMPORT_TASK
from webhooks_app.services.events import IMPORT_COMPLETED, IMPORT_FAILED, event_emit

logger = logging.getLogger(__name__)


# A queued job whose task has not started for this long lost its message and is queued again.
QUEUED_LOST_AFTER = timedelta(minutes=10)
# Large exports take longer than the default task timeout.
TASK_TIMEOUT_SECONDS = 6 * 3600
# Cyclic-GC generation thresholds while a job runs (CPython's defaults are 700, 10, 10).
IMPORT_GC_THRESHOLDS = (20_000, 20, 100)
# A job that wrote at least this many chunks ends with memory_store_vacuum: its cost is a
# fraction of the import's, and on LongMemEval dev (about 250 chunks and 1,300 rows per user)
# the first searches after a fresh ingest went from p95 57 ms (idle; 310 ms at load 2-3) to 37.
# It runs before the verification, whose reads need the fresh row count: planned on the stale
# one, verifying a 200 MB export (61,688 chunks into an empty table) took 11.8 s, after 3.2.
IMPORT_VACUUM_MIN_CHUNKS = 100


# --------------------------------------------------------------------------------------------
# Creating jobs


# --------------------------------------------------------------------------------------------


def _safe_name(name: str) -> str:
    base = Path(name or "upload").name.strip() or "upload"
    return base[:255]


def import_job_create(
    *,
    user,
    uploads: Sequence[UploadedFile],
    app_id: str | None = None,
    project_id: str = "",
    agent_id: str = "external",
    origin: str = ImportJob.Origin.API,
) -> ImportJob:
    """Store the uploaded files with their manifest rows and queue the import.

    Zip uploads are checked against the archive caps first (``archive_check``), so a bomb or
    an archive with traversal or symlink members is refused before anything is written. Files
    are written to disk chunk by chunk while their SHA-256 is computed, so a large export is
    never held in memory. The task is queued only after the transaction commits. Raises
    InvalidInput when no file is given or an archive is unsafe, PayloadTooLarge (413) when an
    archive is over a cap; nothing is left in the upload folder then.
    """
    if not uploads:
        raise InvalidInput("Attach one or more files in the 'files' field.", field="files")
    for upload in uploads:
        _upload_archive_check(upload)
    job = ImportJob(
        user=user,
        app_id=app_id or settings.MNEMO_DEFAULT_APP_ID,
        project_id=project_id or "",
        agent_id=agent_id or "external",
        origin=origin,
    )
    directory = job_dir(job)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        with transaction.atomic():
            job.upload_dir = str(directory)
            job.save()
            rows = []
            for position, upload in enumerate(uploads):
                target = directory / f"{position:04d}.upload"
                digest = hashlib.sha256()
                size = 0
                with open(target, "wb") as out:
                    for block in upload.chunks():
                        digest.update(block)
                        size += len(block)
                        out.write(block)
                rows.append(
                    ImportFile(
                        job=job,
                        user=user,
                        position=position,
                        name=_safe_name(upload.name),
                        path=str(target),
                        size_bytes=size,
                        content_hash=digest.hexdigest(),
                    )
                )
            ImportFile.objects.bulk_create(rows)
            transaction.on_commit(lambda: import_job_enqueue(job_id=job.id))
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return job


def _upload_archive_check(upload: UploadedFile) -> None:
    """Refuse a zip upload over the caps or with unsafe members, reading it where Django put it
    (memory or its own temporary file), never from the upload folder."""
    handle = upload.file
    try:
        handle.seek(0)
        if handle.read(4) != b"PK\x03\x04":
            return
        handle.seek(0)
        archive_check(handle, name=_safe_name(upload.name))
    except ArchiveRejected as exc:
        raise exc.as_domain_error() from exc
    finally:
        handle.seek(0)


def import_job_enqueue(*, job_id) -> None:
    """Queue the import task (django-q2); in tests and MNEMO_TASKS_SYNC it runs inline."""
    async_task(IMPORT_TASK, str(job_id), timeout=TASK_TIMEOUT_SECONDS)


def import_job_create_from_paths(
    *,
    user,
    paths: Sequence[Path | str],
    app_id: str | None = None,
    project_id: str = "",
    agent_id: str = "external",
) -> ImportJob:
    """A job over local files and folders (read in place, never copied or modified).

    Folders are walked recursively in name order; hidden files are ignored. Raises
    InvalidInput for a path that does not exist or when nothing is found.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise InvalidInput(f"{path} does not exist.", field="paths")
        if path.is_dir():
            files.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        else:
            files.append(path)
    if not files:
        raise InvalidInput("No files found.", field="paths")
    with transaction.atomic():
        job = ImportJob.objects.create(
            user=user,
            app_id=app_id or settings.MNEMO_DEFAULT_APP_ID,
            project_id=project_id or "",
            agent_id=agent_id or "external",
            origin=ImportJob.Origin.CLI,
        )
        job.upload_dir = str(job_dir(job))  # only archives are extracted there
        job.save(update_fields=["upload_dir"])
        ImportFile.objects.bulk_create(
            ImportFile(
                job=job,
                user=user,
                position=position,
                name=path.name,
                path=str(path.resolve()),
                size_bytes=path.stat().st_size,
            )
            for position, path in enumerate(files)
        )
    return job


def import_job_get_for_user(*, user, import_id) -> ImportJob:
    """The caller's import job with its files; another user's job is NotFound (404)."""
    job = (
        ImportJob.objects.filter(user=user, id=import_id)
        .prefetch_related(Prefetch("files", queryset=ImportFile.objects.order_by("position", "id")))
        .first()
    )
    if job is None:
        raise NotFound(f"Import {import_id} not found.", code="import_not_found")
    return job


# --------------------------------------------------------------------------------------------
# Running a job


# --------------------------------------------------------------------------------------------


def import_job_claim(*, job_id) -> bool:
    """Mark the job running if it is queued or its lease ran out; False if a worker holds it.

    The conditional UPDATE lets exactly one of any number of concurrent callers win; it bumps
    ``attempts``, the fencing token the winner renews its lease with (memory_site.leases).
    """
    now = timezone.now()
    claimed = (
        ImportJob.objects.filter(id=job_id)
        .filter(
            Q(status=ImportJob.Status.QUEUED)
            | Q(status=ImportJob.Status.RUNNING, heartbeat_at__lt=lease_expired_before())
        )
        .update(
            status=ImportJob.Status.RUNNING,
            heartbeat_at=now,
            attempts=F("attempts") + 1,
        )
    )
    if claimed:
        ImportJob.objects.filter(id=job_id, started_at__isnull=True).update(started_at=now)
    return bool(claimed)


def import_jobs_resume_abandoned() -> int:
    """Queue the import task again for every job no worker is running; returns how many.

    A worker killed mid-import (kill -9, out of memory, Ctrl-C on ``serve``) leaves its job
    `running` with a lease that stops being renewed; once it ran out the job is queued again
    and resumes where it stopped (files already imported are skipped, the file that was being
    written rolled back with its worker's connection). Queued jobs whose message was lost are
    queued again after QUEUED_LOST_AFTER. Run every minute by a schedule.
    """
    abandoned = list(
        ImportJob.objects.filter(
            Q(status=ImportJob.Status.RUNNING, heartbeat_at__lt=lease_expired_before())
            | Q(status=ImportJob.Status.QUEUED, created_at__lt=timezone.now() - QUEUED_LOST_AFTER)
        ).values_list("id", flat=True)
    )
    for job_id in abandoned:
        logger.warning("import job %s was abandoned by its worker; queued again", job_id)
        import_job_enqueue(job_id=job_id)
    return len(abandoned)


def import_job_run(
    *, job_id, progress: ImportProgress | None = None, embed: bool = True
) -> ImportJob:
    """Process every pending file of the job, then verify and summarize. Idempotent.

    A job already finished, or held by another worker's lease, is returned unchanged. While it
    runs, the job's lease is renewed; a worker that finds its lease taken over stops after the
    current file. Unexpected errors outside a single file mark the job failed (files already
    imported stay imported). ``embed=False`` stores chunks without vectors (backfill with
    ``manage.py reembed --only-missing``), for very large imports on slow machines.
    """
    progress = progress or ImportProgress()
    if not import_job_claim(job_id=job_id):
        return ImportJob.objects.get(id=job_id)
    job = ImportJob.objects.select_related("user").get(id=job_id)
    started = time.monotonic()
    with (
        LeaseKeeper(ImportJob, job.id, attempt=job.attempts),
        children_allowed(),
        _fewer_gc_passes(),
    ):
        finished = _import_job_files(job=job, progress=progress, embed=embed, started=started)
    if finished and job.upload_dir and not settings.MNEMO_KEEP_UPLOADS:
        shutil.rmtree(job.upload_dir, ignore_errors=True)
    return job


@contextmanager
def _fewer_gc_passes() -> Iterator[None]:
    """Run the cyclic garbage collector less often while a job runs (restored after).

    An import allocates model instances, parsed messages and row values by the hundred
    thousand; with CPython's default thresholds the collector rescans every long-lived object
    of the process (Django, caches) again and again. Reference counting frees all of it anyway.
    """
    previous = gc.get_threshold()
    gc.set_threshold(*IMPORT_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def _import_job_files(
    *, job: ImportJob, progress: ImportProgress, embed: bool, started: float
) -> bool:
    """The body of ``import_job_run``: every pending file, then the summary and status.

    Returns False when the lease was lost (another worker took the job over): the job row is
    then theirs and is left alone.
    """
    workers = JobWorkers()
    try:
        while True:
            if not lease_held(ImportJob, job.id, attempt=job.attempts):
                logger.warning("import job %s was taken over by another worker", job.id)
                return False
            import_file = (
                job.files.filter(status=ImportFile.Status.PENDING)
                .order_by("position", "id")
                .first()
            )
            if import_file is None:
                break
            import_file_process(
                import_file=import_file, job=job, progress=progress, embed=embed, workers=workers
            )
        duration_seconds = time.monotonic() - started
        written = job.files.filter(status=ImportFile.Status.IMPORTED, is_archive=False).aggregate(
            chunks=Sum("chunks_written")
        )["chunks"]
        if (written or 0) >= IMPORT_VACUUM_MIN_CHUNKS:
            memory_store_vacuum()
        job.summary = import_job_summary(
            job=job, duration_seconds=duration_seconds, pool=workers.started
        )
        job.status, job.error = _job_outcome(job)
    except Exception as exc:  # the job record must say what happened
        logger.exception("import job %s failed", job.id)
        job.status = ImportJob.Status.FAILED
        job.error = f"{type(exc).__name__}: {exc}"
        job.summary = import_job_summary(job=job, duration_seconds=time.monotonic() - started)
    finally:
        workers.discard()
    job.finished_at = timezone.now()
    with transaction.atomic():
        job.save(update_fields=["status", "error", "summary", "finished_at"])
        if job.status in (ImportJob.Status.DONE, ImportJob.Status.PARTIAL, ImportJob.Status.FAILED):
            event_emit(
                user_id=job.user_id,
                event=IMPORT_FAILED if job.status == ImportJob.Status.FAILED else IMPORT_COMPLETED,
                data={
                    "import_id": str(job.id),
                    "status": job.status,
                    "error": job.error,
                    "summary": job.summary,
                    "finished_at": job.finished_at,
                },
            )
    return True


def _job_outcome(job: ImportJob) -> tuple[str, str]:
    """`done` only if no file failed; `partial` if some did and others were imported or
    skipped; `failed` if every file failed, or none was a chat export Mnemo reads (an upload
    that imported nothing must not read as a success). The files' own rows carry the reasons."""
    rows = list(job.files.filter(is_archive=False).values_list("status", "error"))
    if rows and all(
        status == ImportFile.Status.SKIPPED and error == UNRECOGNIZED for status, error in rows
    ):
        noun = "the file is not" if len(rows) == 1 else f"none of the {len(rows)} files is"
        return (
            ImportJob.Status.FAILED,
            f"nothing imported: {noun} a chat export Mnemo reads (ChatGPT, Claude, Gemini, "
            "Open WebUI; see the README's export formats)",
        )
    statuses = [status for status, _ in rows]
    statuses += list(
        job.files.filter(is_archive=True, status=ImportFile.Status.FAILED).values_list(
            "status", flat=True
        )
    )
    failed = statuses.count(ImportFile.Status.FAILED)
    if not failed:
        return ImportJob.Status.DONE, ""
    if failed == len(statuses):
        noun = "the file" if failed == 1 else f"all {failed} files"
        return ImportJob.Status.FAILED, f"{noun} failed; see each file's error"
    return (
        ImportJob.Status.PARTIAL,
        f"{failed} of {len(statuses)} files failed; see each file's error",
    )
