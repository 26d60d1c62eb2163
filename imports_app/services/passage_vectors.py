"""The vectors of an imported file's passages, embedded after its import in a background task.

Why: a pair of a real export embeds ~615 tokens with its passages (the chunk's header
and prompt ~197, a long prompt as a passage of its own ~108, the reply's passages ~310), and on a
2-core machine the local model does ~20,000 tokens a second, so an import that embeds everything
in its transaction cannot pass ~55 pairs/s. The import now embeds each exchange's chunk (its
header and prompt) and stores the passages with embedding NULL: the file commits with every
exchange findable by meaning through its chunk and every passage findable by its words (the
search vector is generated on insert). Once it commits, ``import_passage_vectors_enqueue``
queues ``import_file_passage_vectors``, which embeds the passages in batches on every core (as
the import did before: the same work on the same cores, after the commit instead of inside it)
and writes each batch with the conditional UPDATE of the after-response embeddings
(``memory_items_embedding_fill``: a passage deleted or re-embedded meanwhile keeps what it has).
``ImportFile.passage_vectors_pending`` says a file still has passages to embed. A task works for
PASSAGE_VECTORS_TASK_SECONDS and queues the rest as a new one (a big file outlasts the task
timeout); the schedule that resumes dead jobs queues a backfill again when no batch has been
written for PASSAGE_VECTORS_STALE_AFTER (``passage_vectors_at``).
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_q.tasks import async_task

from imports_app.models import ImportFile
from ingestion_app.models import MemoryItem
from ingestion_app.services.deferred_embeddings import EmbeddingJob, memory_items_embedding_fill
from memory_site.db_locks import advisory_try_lock
from memory_site.providers import get_embedder
from memory_site.task_paths import IMPORT_PASSAGE_VECTORS_TASK

logger = logging.getLogger(__name__)

# A backfill that has written no batch this long (since its file was imported or its last
# batch) is queued again: its worker died.
PASSAGE_VECTORS_STALE_AFTER = timedelta(minutes=10)
# One task's share of a big file, in seconds: then it queues the rest as a new task, well
# inside the task timeout (a 200 MB export's ~200,000 passages take ~15 minutes on 2 cores).
PASSAGE_VECTORS_TASK_SECONDS = 240.0


def import_passage_vectors_enqueue(*, import_file_id: int) -> None:
    """Queue the passage vectors of an imported file (callers do it on commit)."""
    async_task(
        IMPORT_PASSAGE_VECTORS_TASK,
        import_file_id,
        task_name=f"import-passage-vectors-{import_file_id}",
    )


def import_file_passage_vectors(
    *, import_file_id: int, batch_size: int | None = None, seconds: float | None = None
) -> int:
    """Embed the file's items still without a vector, oldest first; returns how many this run
    wrote.

    A run holds the advisory lock ``import-passage-vectors:<file id>`` (a second worker on the
    same file leaves at once; the file's entity backfill, which runs beside it, takes its own).
    Each batch's vectors are written in one statement, so a worker killed mid-file loses at
    most its batch and a rerun starts with what is still NULL. When nothing is left the file
    stops being pending. ``seconds``: stop after the batch that passes this long, the file
    still pending.
    """
    started = time.monotonic()
    import_file = (
        ImportFile.objects.filter(
            id=import_file_id, status=ImportFile.Status.IMPORTED, passage_vectors_pending=True
        )
        .only("id", "user_id")
        .first()
    )
    if import_file is None:
        return 0
    size = max(1, int(batch_size or settings.EMBEDDING_BATCH_SIZE))
    embedder = get_embedder()
    done = 0
    with advisory_try_lock(f"import-passage-vectors:{import_file_id}") as acquired:
        while acquired:
            batch = list(
                MemoryItem.objects.filter(
                    user_id=import_file.user_id,
                    embedding__isnull=True,
                    metadata__import_file_id=import_file_id,
                )
                .order_by("id")
                .only(*EmbeddingJob.FIELDS)[:size]
            )
            written = (
                memory_items_embedding_fill(
                    [EmbeddingJob.of(item) for item in batch], embedder=embedder, every_core=True
                )
                if batch
                else 0
            )
            if not written:
                if batch:
                    # Every row of the batch changed before its vector (edited: its editor
                    # embeds it): nothing here can make progress on them.
                    logger.warning(
                        "import file %s: %d items changed before their vector; left to reembed",
                        import_file_id,
                        len(batch),
                    )
                ImportFile.objects.filter(id=import_file_id).update(
                    passage_vectors_pending=False, passage_vectors_at=timezone.now()
                )
                break
            done += written
            ImportFile.objects.filter(id=import_file_id).update(passage_vectors_at=timezone.now())
            if seconds is not None and time.monotonic() - started >= seconds:
                break
    return done


def import_job_passage_vectors(*, job) -> int:
    """Embed the passages of every file the job imported, here and now (the command line and
    the benchmarks, where no worker runs the queued tasks); returns how many were written."""
    return sum(
        import_file_passage_vectors(import_file_id=import_file_id)
        for import_file_id in job.files.filter(status=ImportFile.Status.IMPORTED).values_list(
            "id", flat=True
        )
    )


def import_files_passage_vectors_resume() -> int:
    """Queue again the passage vectors that have made no progress for
    PASSAGE_VECTORS_STALE_AFTER since their file's import or their last batch (the worker
    died, or none ran); returns how many were queued."""
    stale = list(
        ImportFile.objects.filter(status=ImportFile.Status.IMPORTED, passage_vectors_pending=True)
        .annotate(progress_at=Coalesce("passage_vectors_at", "processed_at"))
        .filter(progress_at__lt=timezone.now() - PASSAGE_VECTORS_STALE_AFTER)
        .values_list("id", flat=True)
    )
    for import_file_id in stale:
        logger.warning(
            "passage vectors of import file %s are unfinished; queued again", import_file_id
        )
        import_passage_vectors_enqueue(import_file_id=import_file_id)
    return len(stale)


def import_passage_vectors_continue(*, import_file_id: int) -> int:
    """The task's work: embed for PASSAGE_VECTORS_TASK_SECONDS, then queue the rest (if any)
    as a new task; returns how many this run wrote."""
    written = import_file_passage_vectors(
        import_file_id=import_file_id, seconds=PASSAGE_VECTORS_TASK_SECONDS
    )
    if (
        written
        and ImportFile.objects.filter(id=import_file_id, passage_vectors_pending=True).exists()
    ):
        import_passage_vectors_enqueue(import_file_id=import_file_id)
    return written
