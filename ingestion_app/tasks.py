"""Thin django-q2 task entry points for ingestion_app (load by id, call a service)."""

from __future__ import annotations

import logging

from ingestion_app.services.deferred_embeddings import memory_items_embed_missing
from ingestion_app.services.document_jobs import (
    document_ingest_job_run,
    document_ingest_jobs_resume_abandoned,
)
from ingestion_app.services.inline import chunk_header_backfill, chunk_headers_resume_stalled
from sessions_app.services.sessions import sessions_close_resume_abandoned

logger = logging.getLogger(__name__)


def document_ingest_job_task(job_id: str) -> dict:
    """Run (or resume) a document ingest; safe to deliver twice (the job is claimed)."""
    job = document_ingest_job_run(job_id=job_id)
    return {"job_id": str(job.id), "status": job.status}


def jobs_resume_abandoned_task() -> dict:
    """Every minute: queue again the ingests, session closes and chunk headers whose worker
    died (imports_app.tasks.imports_resume_abandoned_task does the same for imports)."""
    return {
        "ingests": document_ingest_jobs_resume_abandoned(),
        "closes": sessions_close_resume_abandoned(),
        "chunk_headers": chunk_headers_resume_stalled(),
    }


def chunk_header_backfill_task(memory_item_id: int) -> str:
    """Write the model's contextual header (and embedding) of an inline chunk stored with a
    placeholder. Failures are logged, not raised: with synchronous tasks they would surface in
    the chat request that queued the backfill."""
    try:
        return chunk_header_backfill(memory_item_id=int(memory_item_id))
    except Exception:
        logger.exception("header backfill of chunk %s failed", memory_item_id)
        return "failed"


def embed_missing_task() -> int:
    """Every minute: embed chat items still without a vector (see deferred_embeddings). Failures
    are logged, not raised; the next run tries again."""
    try:
        return memory_items_embed_missing()
    except Exception:
        logger.exception("embedding chat items without a vector failed")
        return 0
