"""django-q2 tasks of imports: the import job, the backfills that follow it, and the minute
sweep that queues again whatever a dead worker left (memory_site.leases)."""

from __future__ import annotations

import logging

from imports_app.services.entity_backfill import (
    import_file_entities_backfill,
    import_files_entities_resume,
)
from imports_app.services.jobs import import_job_run, import_jobs_resume_abandoned
from imports_app.services.passage_vectors import (
    import_files_passage_vectors_resume,
    import_passage_vectors_continue,
)

logger = logging.getLogger(__name__)


def import_job_task(job_id: str) -> dict:
    """Run (or resume) a chat-export import; safe to deliver twice (the job is claimed)."""
    job = import_job_run(job_id=job_id)
    return {"import_id": str(job.id), "status": job.status}


def imports_resume_abandoned_task() -> dict:
    """Every minute: queue again the imports and the entity and passage-vector backfills of
    imported files whose worker died."""
    return {
        "imports": import_jobs_resume_abandoned(),
        "import_entities": import_files_entities_resume(),
        "import_passage_vectors": import_files_passage_vectors_resume(),
    }


def import_entities_backfill_task(import_file_id: int) -> int:
    """Extract the entities of an imported file's chunks (resumable, safe to deliver twice).
    Failures are logged, not raised: with synchronous tasks they would fail the import that
    queued the backfill; the resume schedule queues an unfinished backfill again."""
    try:
        return import_file_entities_backfill(import_file_id=int(import_file_id))
    except Exception:
        logger.exception("entity backfill of import file %s failed", import_file_id)
        return 0


def import_passage_vectors_task(import_file_id: int) -> int:
    """Embed an imported file's passages (resumable, safe to deliver twice). Failures are
    logged, not raised, as for the entity backfill; the resume schedule queues it again."""
    try:
        return import_passage_vectors_continue(import_file_id=int(import_file_id))
    except Exception:
        logger.exception("passage vectors of import file %s failed", import_file_id)
        return 0
