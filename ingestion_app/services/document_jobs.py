"""Document ingest as a background job: validated in the request, run by a task worker.

``document_ingest_job_create`` checks what can be checked without reading the content
(exactly one of text or file, size, type, options, an empty file or blank text), writes the
payload as sent (the file's bytes or the text) under the upload folder and queues the task
after commit, so the request answers 202 before any CPU-heavy work: text extraction (pypdf
needs seconds for a PDF of a few hundred pages), redaction, chunking and embedding. A file that
cannot be read (a broken PDF, invalid JSON) fails the job with ``document_unreadable`` and the
reason. The worker (``document_ingest_job_run``) claims the job with a lease
(memory_site.leases) and embeds in batches, reporting progress and stopping at the next batch
when the job is cancelled; the document is stored in one transaction at the end, so a job
cancelled or killed midway stores nothing, and a resumed one starts again from the payload.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django_q.tasks import async_task

from ingestion_app.models import DocumentIngestJob
from ingestion_app.services.documents import (
    document_ingest_text,
    document_request_check,
    document_text_extract,
)
from memory_site.errors import DomainError, InvalidInput, NotFound, PayloadTooLarge
from memory_site.leases import LeaseKeeper, lease_expired_before
from memory_site.task_paths import DOCUMENT_INGEST_TASK

logger = logging.getLogger(__name__)

TASK_TIMEOUT_SECONDS = 3600
# params["payload"] of a job whose payload is the content as sent (jobs queued before have the
# extracted text instead, without this marker).
RAW_PAYLOAD = "raw"


class IngestCancelled(Exception):
    """The job was cancelled (or taken over) while it ran: stop before storing anything."""


def _job_dir() -> Path:
    return Path(settings.MNEMO_UPLOAD_DIR) / "ingest"


def document_ingest_job_create(
    *,
    user,
    text: str | None = None,
    upload=None,
    filename: str = "",
    mime_type: str = "",
    title: str = "",
    options: dict | None = None,
    app_id: str | None = None,
    project_id: str = "",
    agent_id: str = "",
) -> DocumentIngestJob:
    """Validate the request, store its payload and queue the ingest; returns the queued job.

    Raises InvalidInput (neither or both of text and file, blank text, an empty file,
    unsupported type, bad options) and PayloadTooLarge (over MNEMO_MAX_DOCUMENT_BYTES), before
    anything is written. The content is not parsed here: the payload stored for the worker is
    the file's bytes or the text as sent.
    """
    if (text is None) == (upload is None):
        raise InvalidInput("Send either 'text' or a 'file'.", field="text")
    limit = settings.MNEMO_MAX_DOCUMENT_BYTES
    field = "file" if upload is not None else "text"
    if upload is not None:
        size = upload.size or 0
        filename = filename or upload.name or ""
        mime_type = mime_type or upload.content_type or ""
    else:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise PayloadTooLarge(
            f"The document is {size} bytes; the limit is {limit} (MNEMO_MAX_DOCUMENT_BYTES).",
            field=field,
        )
    kind = document_request_check(
        text=text,
        head=next(upload.chunks(1024), b"") if upload is not None else None,
        size=size,
        filename=filename,
        mime_type=mime_type,
        options=options,
    )
    if upload is not None:
        payload = b"".join(upload.chunks())
    else:
        payload = text.encode("utf-8", "surrogatepass")

    job = DocumentIngestJob(
        user=user,
        is_file=upload is not None,
        payload_bytes=size,
        params={
            "filename": filename[:500],
            "mime_type": kind,
            "title": title,
            "options": options or {},
            "app_id": app_id or settings.MNEMO_DEFAULT_APP_ID,
            "project_id": project_id or "",
            "agent_id": agent_id or "",
            "payload": RAW_PAYLOAD,
        },
    )
    directory = _job_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{job.id}.payload"
    job.payload_path = str(target)
    try:
        target.write_bytes(payload)
        with transaction.atomic():
            job.save()
            transaction.on_commit(lambda: document_ingest_job_enqueue(job_id=job.id))
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return job


def document_ingest_job_enqueue(*, job_id) -> None:
    """Queue the ingest task (django-q2); in tests and MNEMO_TASKS_SYNC it runs inline."""
    async_task(DOCUMENT_INGEST_TASK, str(job_id), timeout=TASK_TIMEOUT_SECONDS)


def document_ingest_job_get_for_user(*, user, job_id) -> DocumentIngestJob:
    """The caller's ingest job; another user's is NotFound (404)."""
    job = DocumentIngestJob.objects.filter(user=user, id=job_id).select_related("document").first()
    if job is None:
        raise NotFound(f"Ingest job {job_id} not found.", code="ingest_job_not_found")
    return job


def document_ingest_job_cancel(*, user, job_id) -> DocumentIngestJob:
    """Cancel a queued or running job (idempotent; a finished job is returned unchanged).

    A running worker notices at its next batch and stops without storing anything.
    """
    job = document_ingest_job_get_for_user(user=user, job_id=job_id)
    cancelled = DocumentIngestJob.objects.filter(
        id=job.id,
        status__in=(DocumentIngestJob.Status.QUEUED, DocumentIngestJob.Status.RUNNING),
    ).update(status=DocumentIngestJob.Status.CANCELLED, finished_at=timezone.now())
    if cancelled:
        _discard_payload(job)
    job.refresh_from_db()
    return job


def document_ingest_job_claim(*, job_id) -> bool:
    """Mark the job running if it is queued or its lease ran out; False otherwise."""
    now = timezone.now()
    claimed = DocumentIngestJob.objects.filter(
        Q(status=DocumentIngestJob.Status.QUEUED)
        | Q(status=DocumentIngestJob.Status.RUNNING, heartbeat_at__lt=lease_expired_before()),
        id=job_id,
    ).update(
        status=DocumentIngestJob.Status.RUNNING,
        heartbeat_at=now,
        attempts=F("attempts") + 1,
        started_at=now,
    )
    return bool(claimed)


def document_ingest_job_run(*, job_id) -> DocumentIngestJob:
    """Run one claimed ingest to the end. Idempotent: a job that is finished, cancelled or held
    by another worker's lease is returned unchanged; the document itself is deduplicated by
    content hash, so a job resumed after its worker died never stores it twice."""
    if not document_ingest_job_claim(job_id=job_id):
        return DocumentIngestJob.objects.get(id=job_id)
    job = DocumentIngestJob.objects.select_related("user").get(id=job_id)
    attempt = job.attempts

    def checkpoint(done: int, total: int) -> None:
        still_ours = DocumentIngestJob.objects.filter(
            id=job.id, status=DocumentIngestJob.Status.RUNNING, attempts=attempt
        ).update(chunks_done=done, chunks_total=total, heartbeat_at=timezone.now())
        if not still_ours:
            raise IngestCancelled

    params = job.params
    try:
        with LeaseKeeper(DocumentIngestJob, job.id, attempt=attempt):
            kind, body = _payload_text(job)
            document, created = document_ingest_text(
                user=job.user,
                body=body,
                kind=kind,
                filename=params.get("filename", ""),
                title=params.get("title", ""),
                options=params.get("options") or None,
                app_id=params.get("app_id"),
                project_id=params.get("project_id", ""),
                agent_id=params.get("agent_id", ""),
                checkpoint=checkpoint,
            )
    except IngestCancelled:
        logger.info("ingest job %s was cancelled while it ran", job.id)
        job.refresh_from_db()
        return job
    except Exception as exc:
        if not isinstance(exc, DomainError):
            logger.exception("ingest job %s failed", job.id)
        _finish(
            job,
            attempt=attempt,
            status=DocumentIngestJob.Status.FAILED,
            error_code=getattr(exc, "code", "") or "ingest_failed",
            error=getattr(exc, "message", "") or f"{type(exc).__name__}: {exc}",
        )
        return job
    _finish(
        job,
        attempt=attempt,
        status=DocumentIngestJob.Status.DONE,
        document=document,
        created_document=created,
        chunks_done=document.chunk_count,
        chunks_total=document.chunk_count,
    )
    return job


def document_ingest_jobs_resume_abandoned() -> int:
    """Queue the task again for every running job whose lease ran out; returns how many."""
    abandoned = list(
        DocumentIngestJob.objects.filter(
            status=DocumentIngestJob.Status.RUNNING, heartbeat_at__lt=lease_expired_before()
        ).values_list("id", flat=True)
    )
    for job_id in abandoned:
        logger.warning("ingest job %s was abandoned by its worker; queued again", job_id)
        document_ingest_job_enqueue(job_id=job_id)
    return len(abandoned)


def _payload_text(job: DocumentIngestJob) -> tuple[str, str]:
    """The job's canonical type and extracted text; raises InvalidInput (document_unreadable)
    when the payload does not read as its type (a broken PDF, invalid JSON, no text)."""
    params = job.params
    payload = Path(job.payload_path).read_bytes()
    kind = params.get("mime_type", "text/plain")
    if params.get("payload") != RAW_PAYLOAD:
        return kind, payload.decode("utf-8", "surrogatepass")
    try:
        return document_text_extract(
            text=None if job.is_file else payload.decode("utf-8", "surrogatepass"),
            data=payload if job.is_file else None,
            filename=params.get("filename", ""),
            mime_type=kind,
            options=params.get("options") or None,
        )
    except InvalidInput as exc:
        raise InvalidInput(exc.message, code="document_unreadable", field=exc.field) from exc


def _finish(job: DocumentIngestJob, *, attempt: int, **fields) -> None:
    """Record the outcome unless the job was cancelled or taken over meanwhile."""
    fields["finished_at"] = timezone.now()
    updated = DocumentIngestJob.objects.filter(
        id=job.id, status=DocumentIngestJob.Status.RUNNING, attempts=attempt
    ).update(**fields)
    if updated:
        _discard_payload(job)
    job.refresh_from_db()


def _discard_payload(job: DocumentIngestJob) -> None:
    if job.payload_path:
        Path(job.payload_path).unlink(missing_ok=True)


__all__ = [
    "IngestCancelled",
    "document_ingest_job_cancel",
    "document_ingest_job_claim",
    "document_ingest_job_create",
    "document_ingest_job_enqueue",
    "document_ingest_job_get_for_user",
    "document_ingest_job_run",
    "document_ingest_jobs_resume_abandoned",
]
