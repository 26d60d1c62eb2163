"""The entities of an imported file, extracted after its import in a background task.

Extraction and resolution cost about as much CPU as the rest of an import, so they are kept
out of the file's write transaction: once the file commits, ``import_entities_enqueue``
queues ``import_file_entities_backfill``, which reads the file's chunks in batches (offline
rules only: a model call per imported chunk is too many) and records how far it got in
``ImportFile.entities_extracted``. Entities therefore appear shortly after an import is done.
Import passages are not read: their chunk holds the same words and names the entities.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import F, Func, IntegerField
from django.utils import timezone
from django_q.tasks import async_task

from entities_app.services.entities import entities_extract
from imports_app.models import ImportFile
from ingestion_app.models import MemoryItem
from memory_site.db_locks import advisory_try_lock
from memory_site.task_paths import IMPORT_ENTITIES_TASK

logger = logging.getLogger(__name__)

# Chunks per transaction: big enough for the bulk queries to pay off, small enough that a
# worker stopped mid-file repeats little and holds its locks briefly.
ENTITY_BACKFILL_BATCH = 500
# A backfill not finished this long after its file was imported is queued again.
ENTITY_BACKFILL_STALE_AFTER = timedelta(minutes=10)


def import_entities_enqueue(*, import_file_id: int) -> None:
    """Queue the entity backfill of an imported file (callers do it on commit)."""
    async_task(IMPORT_ENTITIES_TASK, import_file_id, task_name=f"import-entities-{import_file_id}")


def import_file_entities_backfill(
    *, import_file_id: int, batch_size: int = ENTITY_BACKFILL_BATCH
) -> int:
    """Extract the entities of the file's chunks from where the last run stopped; returns how
    many chunks this run read.

    A run holds the advisory lock ``import-entities:<file id>`` (a second worker on the same
    file leaves at once; the file's passage-vector task, which runs beside it, takes its own).
    Each batch is one transaction that advances ``entities_extracted`` with the batch, so a
    worker killed mid-file loses at most its batch's work and a rerun starts after the last
    committed batch. Re-running a finished file reads nothing; the extraction itself is
    idempotent too (``entities_extract``), so even a repeated batch changes nothing.
    """
    import_file = (
        ImportFile.objects.filter(id=import_file_id, status=ImportFile.Status.IMPORTED)
        .only("id", "user_id", "chunk_ids")
        .first()
    )
    if import_file is None:
        return 0
    chunk_ids = import_file.chunk_ids
    done = 0
    with advisory_try_lock(f"import-entities:{import_file_id}") as acquired:
        while acquired:
            with transaction.atomic():
                cursor = (
                    ImportFile.objects.select_for_update()
                    .filter(id=import_file_id)
                    .values_list("entities_extracted", flat=True)
                    .first()
                )
                if cursor is None or cursor >= len(chunk_ids):
                    break
                batch = chunk_ids[cursor : cursor + batch_size]
                items = list(
                    MemoryItem.objects.filter(user_id=import_file.user_id, chunk_id__in=batch)
                    .defer("embedding", "raw_content", "embedding_text", "keyword_context")
                    .order_by("id")
                )
                entities_extract(items=items, use_llm=False)
                ImportFile.objects.filter(id=import_file_id).update(
                    entities_extracted=cursor + len(batch)
                )
                done += len(batch)
    return done


def import_files_entities_resume() -> int:
    """Queue again the backfills left unfinished for ENTITY_BACKFILL_STALE_AFTER (their worker
    died, or no worker ran while the import was done by the command line); returns how many."""
    stale = list(
        ImportFile.objects.filter(
            status=ImportFile.Status.IMPORTED,
            processed_at__lt=timezone.now() - ENTITY_BACKFILL_STALE_AFTER,
            entities_extracted__lt=Func(
                F("chunk_ids"), function="cardinality", output_field=IntegerField()
            ),
        ).values_list("id", flat=True)
    )
    for import_file_id in stale:
        logger.warning(
            "entity backfill of import file %s is unfinished; queued again", import_file_id
        )
        import_entities_enqueue(import_file_id=import_file_id)
    return len(stale)
