"""One manifest file: parsed conversations in rounds, chunked in the job's worker pool."""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import zipfile
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import get_context
from pathlib import Path

from django.db import connection, transaction
from django.utils import timezone
from django_q.tasks import async_task

from imports_app.models import ImportFile, ImportJob
from imports_app.services.archives import UNRECOGNIZED, archive_depth, archive_expand
from imports_app.services.entity_backfill import import_entities_enqueue
from imports_app.services.passage_vectors import import_passage_vectors_enqueue
from imports_app.services.writer import ChunkWriter, ImportOutcome
from ingestion_app.chunking.workers import prepare_worker_init
from ingestion_app.parsers import (
    CONVERSATION_FORMATS,
    ZIP,
    Conversation,
    ParseError,
    SkippedConversation,
    UnrecognizedFormat,
    detect_format,
    json_damage,
    parse_file,
    skipped_note,
)
from memory_site.db_locks import advisory_transaction_lock
from memory_site.metrics import IMPORTED_PAIRS
from memory_site.providers import ProviderError
from memory_site.task_paths import PROFILE_IMPORT_READ_TASK

logger = logging.getLogger(__name__)


# Conversations are written in rounds of about this many turn pairs (bounded memory).
PAIRS_PER_ROUND = 500
# Files at least this large are prepared in worker processes (0 workers: one per CPU).
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
PARALLEL_WORKERS = 0
# How long a new pool may take to run its first (empty) task before the file is done inline.
POOL_START_TIMEOUT_SECONDS = 120


class NoTurnPairs(Exception):
    """A recognized, non-empty file produced no turn pair: the parser must not fail silently."""


# --------------------------------------------------------------------------------------------
# Progress reporting (the CLI shows a bar; the task reports nothing)


# --------------------------------------------------------------------------------------------


class ImportProgress:
    """Callbacks for long imports; the default does nothing."""

    def file_started(self, import_file: ImportFile) -> None:
        pass

    def pairs_done(self, count: int) -> None:
        pass

    def file_finished(self, import_file: ImportFile) -> None:
        pass


def import_file_process(
    *,
    import_file: ImportFile,
    job: ImportJob,
    progress: ImportProgress | None = None,
    embed: bool = True,
    workers: JobWorkers | None = None,
) -> ImportFile:
    """Import one file atomically and record the outcome in its manifest row.

    Archives are opened into member rows (processed next by the job loop). Unrecognized
    files are skipped with the reason "unrecognized format"; a file whose exact content was
    imported before is skipped as a duplicate; any error rolls the file's chunks back and
    marks it failed with the error, and the job goes on with the next file.
    """
    progress = progress or ImportProgress()
    progress.file_started(import_file)
    path = Path(import_file.path)
    try:
        if not import_file.content_hash:
            import_file.content_hash, import_file.size_bytes = _hash_file(path)
        file_format = import_file.format or detect_format(path) or ""
        import_file.format = file_format
        if file_format == ZIP:
            archive_expand(archive=import_file, job=job, depth=archive_depth(import_file))
            return _finish(import_file, progress)
        if file_format not in CONVERSATION_FORMATS:
            # A cut-off export too short to show its format's keys is a broken file, not an
            # unknown one: it fails with the reason.
            damage = json_damage(path)
            import_file.status = ImportFile.Status.FAILED if damage else ImportFile.Status.SKIPPED
            import_file.error = damage or UNRECOGNIZED
            return _finish(import_file, progress)
        previous = (
            ImportFile.objects.filter(
                user=job.user,
                content_hash=import_file.content_hash,
                status=ImportFile.Status.IMPORTED,
                is_archive=False,
            )
            .exclude(id=import_file.id)
            .order_by("-processed_at")
            .first()
        )
        if previous is not None:
            import_file.status = ImportFile.Status.SKIPPED
            import_file.duplicates_skipped = previous.turn_pairs
            import_file.turn_pairs = previous.turn_pairs
            import_file.conversations = previous.conversations
            import_file.error = (
                f"already imported: same content as {previous.name} "
                f"(imported {previous.processed_at:%Y-%m-%d %H:%M} UTC)"
            )
            return _finish(import_file, progress)

        def attempt(parallel: bool) -> ImportFile:
            # The chunks, the ledger and this manifest row commit together or not at all.
            with transaction.atomic():
                # One import at a time per user: two jobs holding the same conversations wait
                # for each other instead of racing on chunk ids, and the later one finds the
                # pairs already in the ledger.
                advisory_transaction_lock(f"import:user:{job.user_id}")
                with connection.cursor() as cursor:
                    # The file's commit need not wait for the WAL flush: a crash right after
                    # it loses the whole file or nothing (it is one transaction), and the job
                    # record written later can only reach disk after it.
                    cursor.execute("SET LOCAL synchronous_commit = off")
                    # Each row's foreign-key checks at the end of its COPY, while the workers
                    # prepare the next round, not all at the commit (a second on 200 MB with
                    # nothing else running).
                    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                outcome = _import_conversations(
                    path=path,
                    file_format=file_format,
                    import_file=import_file,
                    job=job,
                    progress=progress,
                    embed=embed,
                    parallel=parallel,
                    workers=workers,
                )
                if outcome.turn_pairs == 0 and outcome.skipped:
                    # Conversations without usable turns never fail a file; they are reported.
                    import_file.status = ImportFile.Status.SKIPPED
                    import_file.error = skipped_note(outcome.skipped)
                    return _finish(import_file, progress)
                if outcome.turn_pairs == 0:
                    raise NoTurnPairs(
                        f"no turn pairs found: the file looks like a {file_format} export but "
                        "no conversation in it has any text (parser failure or empty export)"
                    )
                import_file.conversations = outcome.conversations
                import_file.turn_pairs = outcome.turn_pairs
                import_file.chunks_written = len(outcome.chunk_ids)
                import_file.duplicates_skipped = outcome.duplicates_skipped
                import_file.chunk_ids = outcome.chunk_ids
                import_file.status = ImportFile.Status.IMPORTED
                import_file.error = skipped_note(outcome.skipped)
                if outcome.chunk_ids:
                    # Entities are extracted after the commit, outside the file's transaction.
                    transaction.on_commit(
                        lambda: import_entities_enqueue(import_file_id=import_file.id)
                    )
                    # So are the profile's statements (the user's own turns).
                    transaction.on_commit(
                        lambda: async_task(
                            PROFILE_IMPORT_READ_TASK,
                            import_file.id,
                            task_name=f"profile-import-{import_file.id}",
                        )
                    )
                import_file.passage_vectors_pending = outcome.passages_deferred > 0
                if outcome.passages_deferred:
                    transaction.on_commit(
                        lambda: import_passage_vectors_enqueue(import_file_id=import_file.id)
                    )
                return _finish(import_file, progress)

        parallel = path.stat().st_size >= PARALLEL_MIN_BYTES
        try:
            return attempt(parallel)
        except (ParseError, NoTurnPairs, ProviderError, UnrecognizedFormat):
            raise
        except Exception:
            if not parallel:
                raise
            # The pool broke (a worker died, ran out of memory or was killed) or could not
            # start: everything rolled back, so the file is imported again in this process. A
            # fault of the file itself fails again here and is reported as such.
            logger.warning("worker pool failed while importing %s; retrying inline", path)
            if workers is not None:
                workers.discard()
            return attempt(False)
    except Exception as exc:
        if not isinstance(exc, ParseError | NoTurnPairs | ProviderError | UnrecognizedFormat):
            logger.exception("import of %s failed", import_file.name)
        import_file.status = ImportFile.Status.FAILED
        import_file.error = _error_text(exc)
        import_file.conversations = import_file.turn_pairs = 0
        import_file.chunks_written = import_file.duplicates_skipped = 0
        import_file.chunk_ids = []
        import_file.passage_vectors_pending = False
        return _finish(import_file, progress)


def _error_text(exc: Exception) -> str:
    if isinstance(exc, ParseError | NoTurnPairs):
        return str(exc)
    if isinstance(exc, ProviderError):
        return f"model provider failed (retry the import): {exc}"
    if isinstance(exc, zipfile.BadZipFile):
        return f"corrupt archive: {exc}"
    if isinstance(exc, OSError):
        return f"cannot read the file: {exc}"
    return f"{type(exc).__name__}: {exc}"


def _finish(import_file: ImportFile, progress: ImportProgress) -> ImportFile:
    import_file.processed_at = timezone.now()
    import_file.save()
    progress.file_finished(import_file)
    return import_file


def _hash_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


# --------------------------------------------------------------------------------------------
# Conversations -> chunks -> rag_store


# --------------------------------------------------------------------------------------------


def _import_conversations(
    *,
    path: Path,
    file_format: str,
    import_file: ImportFile,
    job: ImportJob,
    progress: ImportProgress,
    embed: bool = True,
    parallel: bool = False,
    workers: JobWorkers | None = None,
) -> ImportOutcome:
    owned = None  # a pool for this file only (no job-wide one given)
    if not parallel:
        pool = None
    elif workers is not None:
        pool = workers.get()
    else:
        pool = owned = _worker_pool()
    writer = None
    try:
        writer = ChunkWriter(job=job, import_file=import_file, embed=embed, pool=pool)
        batch: list[Conversation] = []
        pairs_in_batch = 0
        skipped: list[SkippedConversation] = []
        for conversation in parse_file(
            path, source_file=import_file.name, file_format=file_format, skipped=skipped
        ):
            batch.append(conversation)
            pairs_in_batch += len(conversation.pairs)
            if pairs_in_batch >= PAIRS_PER_ROUND:
                writer.write(batch)
                progress.pairs_done(pairs_in_batch)
                IMPORTED_PAIRS.inc(pairs_in_batch)
                batch, pairs_in_batch = [], 0
        if batch:
            writer.write(batch)
            progress.pairs_done(pairs_in_batch)
            IMPORTED_PAIRS.inc(pairs_in_batch)
        writer.finish()
        writer.outcome.skipped = skipped
    except BaseException:
        if writer is not None:
            writer.abandon()
        raise
    finally:
        if owned is not None:
            owned.shutdown(wait=True, cancel_futures=True)
    return writer.outcome


def _worker_pool() -> Executor | None:
    """Processes for redaction, chunk planning and local headers of large files, or None.

    Spawned (not forked) so no database connection or thread state is inherited. Inside a
    django-q worker (a daemonic process) children are allowed by ``children_allowed``; if the
    pool still cannot run a first task, None is returned and the caller works inline.
    """
    workers = PARALLEL_WORKERS if PARALLEL_WORKERS > 0 else (os.cpu_count() or 1)
    if workers < 1:
        return None
    pool = None
    try:
        pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=get_context("spawn"), initializer=prepare_worker_init
        )
        pool.submit(os.getpid).result(timeout=POOL_START_TIMEOUT_SECONDS)
    except Exception:
        logger.warning("the parse pool could not start; this import runs inline", exc_info=True)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        return None
    return pool


@contextmanager
def children_allowed() -> Iterator[None]:
    """Let this process start the parse pool even if it is daemonic (a django-q worker).

    multiprocessing refuses children in a daemonic process only so that they are not left
    behind when it exits; the pool is shut down before the job returns, and a worker killed
    outright takes its children with it through ``manage.py serve``'s process group.
    """
    config = multiprocessing.current_process()._config  # noqa: SLF001 - no public switch
    daemonic = config.get("daemon", False)
    config["daemon"] = False
    try:
        yield
    finally:
        if daemonic:
            config["daemon"] = True


class JobWorkers:
    """The job's worker processes: started by the first file large enough to need them, then
    shared by the files after it and by the verification, and shut down when the job ends
    (starting a pool costs each worker about a second of imports)."""

    def __init__(self) -> None:
        self._pool: Executor | None = None

    @property
    def started(self) -> Executor | None:
        return self._pool

    def get(self) -> Executor | None:
        if self._pool is None:
            self._pool = _worker_pool()
        return self._pool

    def discard(self) -> None:
        """Shut the pool down (the job ended, or the pool broke: a later file starts a new one)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
