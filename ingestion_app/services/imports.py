"""Chat-export imports: upload -> manifest -> parse -> chunk -> embed -> store -> verify.

The reference's batch mode, Layers 1-6, as one service:

1. ``import_job_create`` (API, admin) or ``import_job_create_from_paths`` (CLI) records one
   manifest row (`ImportFile`) per file with its size and content hash; the API queues
   ``ingestion_app.tasks.import_job_task`` after commit.
2. ``import_job_run`` claims the job (a conditional update, so two workers never run it
   together), opens archives into member rows, and imports each file in its own transaction:
   a file that fails leaves no chunk behind and never stops the others.
3. Per file: a file whose content hash was already imported is skipped; otherwise its
   conversations are streamed, redacted, chunked, given headers (LLM when configured, batched
   with bounded concurrency; else the local summarizer), embedded from header + user prompt
   in batches and bulk-inserted. The pair ledger (`ImportedConversation`) makes re-imports
   and changed exports add only pairs not stored before.
4. ``import_job_verify`` checks the written chunk ids are unique and all present, and that
   every stored chunk renders to Markdown whose frontmatter parses back to the same fields.

Every step is idempotent: running a job again skips files already processed, and importing
the same export again writes nothing.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import shutil
import time
import zipfile
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import connection, transaction
from django.db.models import F, Prefetch, Q
from django.db.models.functions import Substr
from django.utils import timezone
from django_q.tasks import async_task

from ingestion_app.chunking import (
    Chunk,
    build_frontmatter,
    chunk_filename,
    chunks_unparseable,
    conversation_key,
    describe_locally,
    frontmatter_from_metadata,
    pair_key,
    prepare_conversations,
    prepare_worker_init,
    render_markdown,
)
from ingestion_app.models import ImportedConversation, ImportFile, ImportJob, MemoryItem
from ingestion_app.parsers import (
    CONVERSATION_FORMATS,
    ZIP,
    Conversation,
    ParseError,
    TurnPair,
    UnrecognizedFormat,
    detect_format,
    parse_file,
)
from ingestion_app.parsers.detect import HEAD_BYTES
from memory_site.db_locks import advisory_transaction_lock
from memory_site.errors import InvalidInput, NotFound
from memory_site.providers import ProviderError, get_embedder, get_llm
from memory_site.task_paths import IMPORT_TASK
from memory_site.tokens import count_tokens
from sessions_app.services.usage import usage_record

logger = logging.getLogger(__name__)

# A job whose worker has not reported for this long is considered abandoned and can be resumed.
STALE_AFTER = timedelta(minutes=10)
# Large exports take longer than the default task timeout.
TASK_TIMEOUT_SECONDS = 6 * 3600
# Conversations are written in rounds of about this many turn pairs (bounded memory).
PAIRS_PER_ROUND = 500
# Files at least this large are prepared in worker processes (0 workers: one per CPU).
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
PARALLEL_WORKERS = 0
# Cyclic-GC generation thresholds while a job runs (CPython's defaults are 700, 10, 10).
IMPORT_GC_THRESHOLDS = (20_000, 20, 100)
HEADER_BATCH_SIZE = 8
# Verification batches (1,000 chunks each) parsed in the pool at a time (bounds memory).
VERIFY_BATCHES_IN_FLIGHT = 4
HEADER_CONCURRENCY = 4
ARCHIVE_MAX_DEPTH = 2
_ARCHIVE_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")
UNRECOGNIZED = "unrecognized format"


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


# --------------------------------------------------------------------------------------------
# Creating jobs
# --------------------------------------------------------------------------------------------


def _job_dir(job: ImportJob) -> Path:
    return Path(settings.MNEMO_UPLOAD_DIR) / "imports" / str(job.id)


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

    Files are written to disk chunk by chunk while their SHA-256 is computed, so a large export
    is never held in memory. The task is queued only after the transaction commits. Raises
    InvalidInput when no file is given.
    """
    if not uploads:
        raise InvalidInput("Attach one or more files in the 'files' field.", field="files")
    job = ImportJob(
        user=user,
        app_id=app_id or settings.MNEMO_DEFAULT_APP_ID,
        project_id=project_id or "",
        agent_id=agent_id or "external",
        origin=origin,
    )
    directory = _job_dir(job)
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
        job.upload_dir = str(_job_dir(job))  # only archives are extracted there
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
    """Mark the job running if it is queued or abandoned; False if another worker has it."""
    now = timezone.now()
    claimed = (
        ImportJob.objects.filter(id=job_id)
        .filter(
            Q(status=ImportJob.Status.QUEUED)
            | Q(status=ImportJob.Status.RUNNING, heartbeat_at__lt=now - STALE_AFTER)
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


def import_job_run(
    *, job_id, progress: ImportProgress | None = None, embed: bool = True
) -> ImportJob:
    """Process every pending file of the job, then verify and summarize. Idempotent.

    A job already done, or running in another worker, is returned unchanged. Unexpected
    errors outside a single file mark the job failed (files already imported stay imported).
    ``embed=False`` stores chunks without vectors (backfill with ``manage.py reembed
    --only-missing``), for very large imports on slow machines.
    """
    progress = progress or ImportProgress()
    if not import_job_claim(job_id=job_id):
        return ImportJob.objects.get(id=job_id)
    job = ImportJob.objects.select_related("user").get(id=job_id)
    started = time.monotonic()
    with _fewer_gc_passes():
        _import_job_files(job=job, progress=progress, embed=embed, started=started)
    if job.upload_dir:
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
) -> None:
    """The body of ``import_job_run``: every pending file, then the summary and status."""
    workers = _JobWorkers()
    try:
        while True:
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
            ImportJob.objects.filter(id=job.id).update(heartbeat_at=timezone.now())
        job.summary = import_job_summary(
            job=job, duration_seconds=time.monotonic() - started, pool=workers.started
        )
        job.status = ImportJob.Status.DONE
        job.error = ""
    except Exception as exc:  # the job record must say what happened
        logger.exception("import job %s failed", job.id)
        job.status = ImportJob.Status.FAILED
        job.error = f"{type(exc).__name__}: {exc}"
        job.summary = import_job_summary(job=job, duration_seconds=time.monotonic() - started)
    finally:
        workers.discard()
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "error", "summary", "finished_at"])


def import_file_process(
    *,
    import_file: ImportFile,
    job: ImportJob,
    progress: ImportProgress | None = None,
    embed: bool = True,
    workers: _JobWorkers | None = None,
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
            _expand_archive(archive=import_file, job=job, depth=_archive_depth(import_file))
            return _finish(import_file, progress)
        if file_format not in CONVERSATION_FORMATS:
            import_file.status = ImportFile.Status.SKIPPED
            import_file.error = UNRECOGNIZED
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
                import_file.error = ""
                return _finish(import_file, progress)

        try:
            return attempt(path.stat().st_size >= PARALLEL_MIN_BYTES)
        except BrokenProcessPool:
            # A worker died (out of memory, killed); everything rolled back, so the file is
            # imported again in this process.
            logger.warning("worker pool broke while importing %s; retrying inline", path)
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


def _archive_depth(import_file: ImportFile) -> int:
    depth = 0
    parent_id = import_file.archive_id
    while parent_id is not None and depth < 10:
        depth += 1
        parent_id = ImportFile.objects.filter(id=parent_id).values_list("archive_id", flat=True)[0]
    return depth


def _expand_archive(*, archive: ImportFile, job: ImportJob, depth: int) -> None:
    """Turn a zip into member rows. Members are sniffed in the archive and only recognized
    exports (or nested archives) are extracted; paths inside the archive are never used as
    file system paths."""
    archive.is_archive = True
    if depth >= ARCHIVE_MAX_DEPTH:
        archive.status = ImportFile.Status.SKIPPED
        archive.error = "archive nested too deeply"
        return
    directory = _job_dir(job)
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


# --------------------------------------------------------------------------------------------
# Conversations -> chunks -> rag_store
# --------------------------------------------------------------------------------------------


@dataclass
class _Outcome:
    conversations: int = 0
    turn_pairs: int = 0
    duplicates_skipped: int = 0
    chunk_ids: list[str] = field(default_factory=list)


def _import_conversations(
    *,
    path: Path,
    file_format: str,
    import_file: ImportFile,
    job: ImportJob,
    progress: ImportProgress,
    embed: bool = True,
    parallel: bool = False,
    workers: _JobWorkers | None = None,
) -> _Outcome:
    owned = None  # a pool for this file only (no job-wide one given)
    if not parallel:
        pool = None
    elif workers is not None:
        pool = workers.get()
    else:
        pool = owned = _worker_pool()
    writer = None
    try:
        writer = _ChunkWriter(job=job, import_file=import_file, embed=embed, pool=pool)
        batch: list[Conversation] = []
        pairs_in_batch = 0
        for conversation in parse_file(path, source_file=import_file.name, file_format=file_format):
            batch.append(conversation)
            pairs_in_batch += len(conversation.pairs)
            if pairs_in_batch >= PAIRS_PER_ROUND:
                writer.write(batch)
                progress.pairs_done(pairs_in_batch)
                batch, pairs_in_batch = [], 0
        if batch:
            writer.write(batch)
            progress.pairs_done(pairs_in_batch)
        writer.finish()
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

    Spawned (not forked) so no database connection or thread state is inherited.
    """
    workers = PARALLEL_WORKERS if PARALLEL_WORKERS > 0 else (os.cpu_count() or 1)
    if workers < 1:
        return None
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=get_context("spawn"), initializer=prepare_worker_init
    )


class _JobWorkers:
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


class _ChunkWriter:
    """Writes rounds of conversations: ledger lookup, chunking, headers, embeddings, insert.

    The CPU-heavy part of a round (redaction, chunk planning, local headers and tags) runs in
    worker processes when a pool is given, while this process parses the next round and
    PostgreSQL stores the previous one; at most ``max_in_flight`` rounds are pending, which
    bounds memory. Everything touching the database stays in this process and transaction.
    """

    def __init__(
        self,
        *,
        job: ImportJob,
        import_file: ImportFile,
        embed: bool = True,
        pool: Executor | None = None,
    ) -> None:
        self.job = job
        self.import_file = import_file
        self.namespace = str(job.user_id)
        self.outcome = _Outcome()
        self.embedder = get_embedder() if embed else None
        self.llm = get_llm()
        self.pool = pool
        self.max_in_flight = (getattr(pool, "_max_workers", 1) + 1) if pool else 0
        self.ledger: dict[str, ImportedConversation] = {}
        self.in_flight: deque[tuple[list[Conversation], list[ImportedConversation], Any]] = deque()

    def write(self, conversations: list[Conversation]) -> None:
        work, rows = self._select(conversations)
        if not work:
            return
        args = ([(c, covered) for c, covered in work],)
        options = {"namespace": self.namespace, "describe": bool(self.llm.is_local)}
        if self.pool is None:
            self._store([c for c, _ in work], rows, prepare_conversations(*args, **options))
            return
        self.in_flight.append(
            ([c for c, _ in work], rows, self.pool.submit(prepare_conversations, *args, **options))
        )
        while len(self.in_flight) >= self.max_in_flight:
            self._store_oldest()

    def finish(self) -> None:
        while self.in_flight:
            self._store_oldest()

    def abandon(self) -> None:
        """Forget the rounds still in the pool (the file failed): queued ones are cancelled,
        running ones finish in the background and their results are dropped."""
        while self.in_flight:
            _raw, _rows, future = self.in_flight.popleft()
            future.cancel()

    def _store_oldest(self) -> None:
        raw, rows, future = self.in_flight.popleft()
        self._store(raw, rows, future.result())

    def _select(
        self, conversations: list[Conversation]
    ) -> tuple[list[tuple[Conversation, frozenset[str]]], list[ImportedConversation]]:
        """Conversations with pairs not stored yet, each with the keys already covered; the
        in-memory ledger is updated here so a conversation repeated later in the file is not
        imported twice even before this round is stored."""
        keyed = [
            (
                conversation_key(
                    namespace=self.namespace,
                    platform=c.platform,
                    conversation_id=c.conversation_id,
                ),
                c,
            )
            for c in conversations
        ]
        unknown = {key for key, _ in keyed if key not in self.ledger}
        if unknown:
            for row in ImportedConversation.objects.filter(
                user_id=self.job.user_id, conversation_key__in=unknown
            ):
                self.ledger[row.conversation_key] = row
        work: list[tuple[Conversation, frozenset[str]]] = []
        rows: dict[str, ImportedConversation] = {}
        for key, conversation in keyed:
            self.outcome.conversations += 1
            self.outcome.turn_pairs += len(conversation.pairs)
            row = self.ledger.get(key)
            covered = frozenset(row.pair_keys) if row else frozenset()
            keys = [pair_key(p) for p in conversation.pairs]
            fresh = [k for k in keys if k not in covered]
            self.outcome.duplicates_skipped += len(keys) - len(fresh)
            if not fresh:
                continue
            work.append((conversation, covered))
            if row is None:
                row = ImportedConversation(
                    user_id=self.job.user_id,
                    conversation_key=key,
                    platform=conversation.platform,
                    conversation_id=conversation.conversation_id[:255],
                )
                self.ledger[key] = row
            row.pair_keys = list(dict.fromkeys([*row.pair_keys, *fresh]))
            row.last_file = self.import_file
            row.updated_at = timezone.now()
            rows[key] = row
        return work, list(rows.values())

    def _store(
        self,
        raw: list[Conversation],
        rows: list[ImportedConversation],
        prepared: list[tuple[Conversation, list[Chunk]]],
    ) -> None:
        planned = [
            (chunk, redacted, original)
            for original, (redacted, chunks) in zip(raw, prepared, strict=True)
            for chunk in chunks
        ]
        titles = {
            conversation_key(
                namespace=self.namespace,
                platform=redacted.platform,
                conversation_id=redacted.conversation_id,
            ): redacted.title
            for redacted, _ in prepared
        }
        for row in rows:
            row.title = (titles.get(row.conversation_key) or "")[:500]
        if not self.llm.is_local:
            describe_chunks(
                [(chunk, redacted) for chunk, redacted, _ in planned],
                llm=self.llm,
                user=self.job.user,
            )
        self._resolve_collisions([chunk for chunk, _, _ in planned])
        # The raw pairs by index, once per conversation (not once per chunk: long
        # conversations have hundreds of chunks).
        raw_pairs: dict[int, dict[int, TurnPair]] = {
            id(original): {p.index: p for p in original.pairs} for original in raw
        }
        items = [
            self._memory_item(chunk, redacted, original, raw_pairs[id(original)])
            for chunk, redacted, original in planned
        ]
        if self.embedder is not None:
            embed_items(items, embedder=self.embedder)
        memory_items_copy(items)
        ImportedConversation.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["user", "conversation_key"],
            update_fields=["pair_keys", "title", "last_file", "updated_at"],
        )
        self.outcome.chunk_ids.extend(item.chunk_id for item in items)

    def _resolve_collisions(self, chunks: list[Chunk]) -> None:
        """Give a revision suffix to a chunk whose id exists with other content (an edited
        branch of a conversation imported before), so no stored chunk is overwritten."""
        taken = set(
            MemoryItem.objects.filter(chunk_id__in={c.chunk_id for c in chunks}).values_list(
                "chunk_id", flat=True
            )
        )
        seen: set[str] = set()
        for chunk in chunks:
            if chunk.chunk_id in taken or chunk.chunk_id in seen:
                base, revision = chunk.chunk_id, 2
                while (
                    f"{base}-r{revision}" in seen
                    or MemoryItem.objects.filter(chunk_id=f"{base}-r{revision}").exists()
                ):
                    revision += 1
                chunk.chunk_id = f"{base}-r{revision}"
            seen.add(chunk.chunk_id)

    def _memory_item(
        self,
        chunk: Chunk,
        redacted: Conversation,
        raw: Conversation,
        raw_by_index: dict[int, TurnPair],
    ) -> MemoryItem:
        frontmatter = build_frontmatter(chunk, redacted, agent_id=self.job.agent_id)
        content = chunk.exchange_markdown()
        raw_chunk = replace(
            chunk, pairs=[raw_by_index[p.index] for p in chunk.pairs], assistant_override=None
        )
        metadata: dict[str, Any] = {
            **frontmatter,
            "conversation_id": raw.conversation_id,
            "conversation_key": chunk.conversation_key,
            "format": raw.format,
            "pair_keys": chunk.pair_keys(),
            "import_job_id": str(self.job.id),
            "import_file_id": self.import_file.id,
        }
        if chunk.part is not None:
            metadata["part"] = chunk.part
            metadata["parts"] = chunk.parts
        attachments = [name for p in chunk.pairs for name in p.attachments]
        if attachments:
            metadata["attachments"] = attachments
        return MemoryItem(
            user_id=self.job.user_id,
            app_id=self.job.app_id,
            project_id=self.job.project_id,
            agent_id=frontmatter["agent_id"],
            source=MemoryItem.Source.CHUNK,
            content=content,
            header=chunk.header,
            raw_content=raw_chunk.exchange_markdown(),
            embedding_text=chunk.embedding_text(),
            topics=[topic[:64] for topic in chunk.topics],
            metadata=metadata,
            chunk_id=chunk.chunk_id,
            content_hash=hashlib.sha256(content.encode("utf-8")).hexdigest(),
            token_count=chunk.token_count or count_tokens(content),
            occurred_at=chunk.timestamp or timezone.now(),
        )


def memory_items_copy(items: Sequence[MemoryItem]) -> None:
    """Insert rag_store rows with COPY: several times cheaper than a multi-row INSERT for
    thousands of chunks. Field values are prepared exactly as ``save()`` prepares them
    (defaults, auto_now, encryption, JSON, arrays, vectors); the generated search vector is
    computed by PostgreSQL. Runs in the caller's transaction; row ids are not read back."""
    if not items:
        return
    fields = [f for f in MemoryItem._meta.concrete_fields if not f.generated and not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(MemoryItem._meta.db_table)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for item in items:
                copy.write_row(
                    [
                        field.get_db_prep_save(field.pre_save(item, True), connection)
                        for field in fields
                    ]
                )


def embed_items(items: Sequence[MemoryItem], *, embedder=None) -> None:
    """Embed ``embedding_text`` (or content) of the items in batches of EMBEDDING_BATCH_SIZE.

    Raises ProviderError when the embedder fails; nothing is written by this function.
    """
    embedder = embedder or get_embedder()
    size = max(1, int(settings.EMBEDDING_BATCH_SIZE))
    for start in range(0, len(items), size):
        window = items[start : start + size]
        vectors = embedder.embed([item.embedding_text or item.content for item in window])
        if len(vectors) != len(window):
            raise ProviderError(f"embedder returned {len(vectors)} vectors for {len(window)} texts")
        for item, vector in zip(window, vectors, strict=True):
            item.embedding = vector


# --------------------------------------------------------------------------------------------
# Headers and tags: LLM (batched, bounded concurrency) or the local summarizer
# --------------------------------------------------------------------------------------------

HEADER_SCHEMA = {
    "type": "object",
    "properties": {
        "chunks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "header": {"type": "string"},
                    "topics": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["index", "header", "topics"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["chunks"],
    "additionalProperties": False,
}

HEADER_INSTRUCTIONS = (
    "You write retrieval headers for chunks of imported chat conversations. For each chunk, "
    "write a contextual header of 2 to 4 sentences that states what the exchange is about "
    "(topic), what the user was trying to accomplish (intent), any earlier context needed to "
    "understand it, and the platform and date. Be specific: name the concrete subject, tools, "
    "places or people; never write generic text such as 'A conversation about AI'. Also give "
    "1 to 3 short lowercase topic tags (kebab-case phrases). Answer with JSON: "
    '{"chunks": [{"index": <n>, "header": "...", "topics": ["..."]}]}, one entry per chunk.'
)
_CLIP_CHARS = 1500


def describe_chunks(items: list[tuple[Chunk, Conversation]], *, llm=None, user=None) -> None:
    """Fill header and topics of each chunk (redacted conversations only).

    With a configured LLM the chunks are sent in batches of HEADER_BATCH_SIZE, at most
    HEADER_CONCURRENCY requests at a time; any chunk the model fails on (error, missing or
    malformed entry) gets the local summarizer's header, so an import never fails on headers.
    """
    llm = llm or get_llm()
    if not items:
        return
    if getattr(llm, "is_local", True):
        for chunk, conversation in items:
            describe_locally([chunk], conversation)
        return
    batches = [items[i : i + HEADER_BATCH_SIZE] for i in range(0, len(items), HEADER_BATCH_SIZE)]
    with ThreadPoolExecutor(max_workers=HEADER_CONCURRENCY) as pool:
        answers = list(pool.map(lambda batch: _llm_headers(llm, batch), batches))
    usage_in = usage_out = 0
    for batch, (answer, tokens_in, tokens_out) in zip(batches, answers, strict=True):
        usage_in += tokens_in
        usage_out += tokens_out
        for position, (chunk, conversation) in enumerate(batch):
            header, topics = answer.get(position, ("", []))
            chunk.header = header
            chunk.topics = topics
            if not chunk.header or not chunk.topics:
                describe_locally([chunk], conversation)
    if user is not None and (usage_in or usage_out):
        usage_record(
            user=user,
            model=llm.model,
            tokens_in=usage_in,
            tokens_out=usage_out,
            kind="import_headers",
        )


def _llm_headers(
    llm, batch: list[tuple[Chunk, Conversation]]
) -> tuple[dict[int, tuple[str, list[str]]], int, int]:
    payload = []
    for position, (chunk, conversation) in enumerate(batch):
        timestamp = chunk.timestamp
        earlier = [p.user_text[:200] for p in conversation.pairs if p.index < chunk.first_index][
            -3:
        ]
        payload.append(
            {
                "index": position,
                "platform": conversation.platform,
                "date": timestamp.date().isoformat() if timestamp else "",
                "conversation_title": conversation.title or "",
                "turns": chunk.turn_range,
                "earlier_user_prompts": earlier,
                "user": chunk.user_text[:_CLIP_CHARS],
                "assistant": chunk.assistant_text[:_CLIP_CHARS],
            }
        )
    messages = [
        {"role": "system", "content": HEADER_INSTRUCTIONS},
        {"role": "user", "content": json.dumps({"chunks": payload}, ensure_ascii=False)},
    ]
    try:
        result = llm.chat_json(messages, schema=HEADER_SCHEMA, schema_name="chunk_headers")
    except ProviderError as exc:
        logger.warning("header generation failed, using local headers: %s", exc)
        return {}, 0, 0
    answers: dict[int, tuple[str, list[str]]] = {}
    for entry in (result or {}).get("chunks") or []:
        if not isinstance(entry, dict):
            continue
        index = entry.get("index")
        header = entry.get("header")
        topics = entry.get("topics")
        if not isinstance(index, int) or not 0 <= index < len(batch):
            continue
        if not isinstance(header, str) or not header.strip():
            continue
        clean_topics = _clean_topics(topics)
        sentences = [s for s in header.replace("?", ".").replace("!", ".").split(".") if s.strip()]
        if not clean_topics or not 1 <= len(sentences) <= 6:
            continue
        answers[index] = (" ".join(header.split()), clean_topics)
    tokens_in = count_tokens(messages[1]["content"]) + count_tokens(HEADER_INSTRUCTIONS)
    tokens_out = count_tokens(json.dumps(result, ensure_ascii=False)) if result else 0
    return answers, tokens_in, tokens_out


def _clean_topics(topics: Any) -> list[str]:
    if not isinstance(topics, list):
        return []
    cleaned: list[str] = []
    for topic in topics:
        if not isinstance(topic, str):
            continue
        tag = "-".join(topic.lower().replace("_", " ").split())[:64].strip("-")
        if tag and tag not in cleaned:
            cleaned.append(tag)
    return cleaned[:3]


# --------------------------------------------------------------------------------------------
# Verification and summary (Layers 5-6 and the processing summary of Layer 4)
# --------------------------------------------------------------------------------------------


def import_job_verify(*, job: ImportJob, pool: Executor | None = None) -> dict:
    """Check what this job wrote: unique chunk ids, counts, and that every chunk parses.

    Reads the stored rows back in batches (bounded memory), renders each as the reference's
    Markdown file and parses it again: the parsed frontmatter must equal the stored one and
    the header and exchange must not be empty. Only the head of each exchange is fetched; the
    body is free text and cannot break the file's structure. With the job's worker ``pool``
    the parsing (most of the cost) runs there while the next batch is read.
    """
    files = list(
        job.files.filter(status=ImportFile.Status.IMPORTED, is_archive=False).only(
            "chunk_ids", "chunks_written", "turn_pairs", "duplicates_skipped"
        )
    )
    ids = [chunk_id for f in files for chunk_id in f.chunk_ids]
    reported = sum(f.chunks_written for f in files)
    new_pairs = sum(f.turn_pairs - f.duplicates_skipped for f in files)
    # (conversation, pair key) -> chunk ids without the part suffix of a split reply
    pair_owners: dict[tuple[str, str], set[str]] = {}
    unique = len(set(ids)) == len(ids)
    found = 0
    unparseable: list[str] = []
    pending: deque[Any] = deque()  # batches being parsed in the pool, oldest first

    def collect_oldest() -> None:
        batch, future = pending.popleft()
        try:
            unparseable.extend(future.result())
        except BrokenProcessPool:
            unparseable.extend(chunks_unparseable(batch))

    for start in range(0, len(ids), 1000):
        window = ids[start : start + 1000]
        rows = (
            MemoryItem.objects.filter(user_id=job.user_id, chunk_id__in=window)
            .annotate(exchange_head=Substr("content", 1, 200))
            .values_list("chunk_id", "metadata", "header", "exchange_head")
        )
        batch = []
        for chunk_id, metadata, header, exchange_head in rows:
            found += 1
            metadata = metadata or {}
            owner = chunk_id.rsplit("-p", 1)[0] if metadata.get("part") else chunk_id
            for key in metadata.get("pair_keys") or []:
                pair_owners.setdefault((metadata.get("conversation_key", ""), key), set()).add(
                    owner
                )
            batch.append((chunk_id, frontmatter_from_metadata(metadata), header, exchange_head))
        if pool is None:
            unparseable.extend(chunks_unparseable(batch))
            continue
        try:
            pending.append((batch, pool.submit(chunks_unparseable, batch)))
        except (BrokenProcessPool, RuntimeError):  # broken or shut down: parse here
            unparseable.extend(chunks_unparseable(batch))
        while len(pending) > VERIFY_BATCHES_IN_FLIGHT:
            collect_oldest()
    while pending:
        collect_oldest()
    pairs_once = all(len(owners) == 1 for owners in pair_owners.values())
    return {
        "ok": unique
        and found == len(ids) == reported
        and not unparseable
        and pairs_once
        and len(pair_owners) == new_pairs,
        "chunk_ids_unique": unique,
        "chunks_reported": reported,
        "chunks_found": found,
        "chunks_parsed": found - len(unparseable),
        "unparseable": unparseable[:20],
        "new_pairs": new_pairs,
        "pairs_in_chunks": len(pair_owners),
        "each_pair_in_one_chunk": pairs_once,
    }


_RECOVERY = {
    "parse": "needs manual intervention: re-export or repair the file, then import it again",
    "provider": "recoverable: import the file again when the model provider is reachable",
    "other": "retry the import; if it fails again, report the error",
}


def import_job_summary(
    *, job: ImportJob, duration_seconds: float | None = None, pool: Executor | None = None
) -> dict:
    """The reference's processing summary, plus the verification report (parsed in the job's
    worker ``pool`` when one is given)."""
    files = list(job.files.filter(is_archive=False).order_by("position", "id"))
    imported = [f for f in files if f.status == ImportFile.Status.IMPORTED]
    skipped = [f for f in files if f.status == ImportFile.Status.SKIPPED]
    failed = [f for f in files if f.status == ImportFile.Status.FAILED]
    failed += list(job.files.filter(is_archive=True, status=ImportFile.Status.FAILED))
    summary = {
        "files_total": len(files),
        "files_processed": len(imported),
        "conversations": sum(f.conversations for f in imported),
        "turn_pairs": sum(f.turn_pairs for f in imported),
        "chunks_generated": sum(f.chunks_written for f in imported),
        "chunks_skipped_duplicates": sum(f.duplicates_skipped for f in imported + skipped),
        "files_skipped": {
            "count": len(skipped),
            "files": [{"name": f.name, "reason": f.error} for f in skipped[:200]],
        },
        "errors": {
            "count": len(failed),
            "files": [
                {
                    "name": f.name,
                    "error": f.error,
                    "recovery": _recovery(f.error),
                    "partial_output": "none: the file's chunks were rolled back",
                }
                for f in failed[:200]
            ],
        },
        "total_chunks": MemoryItem.objects.filter(
            user_id=job.user_id, source=MemoryItem.Source.CHUNK
        ).count(),
        "verification": import_job_verify(job=job, pool=pool),
    }
    if duration_seconds is not None:
        summary["duration_seconds"] = round(duration_seconds, 2)
    return summary


def _recovery(error: str) -> str:
    if error.startswith("model provider failed"):
        return _RECOVERY["provider"]
    if error.startswith(("truncated", "invalid", "no turn pairs", "line ", "corrupt")):
        return _RECOVERY["parse"]
    return _RECOVERY["other"]


def chunks_export(
    *,
    directory: Path,
    user=None,
    platform: str | None = None,
    agent_id: str | None = None,
) -> int:
    """Write each stored turn-pair chunk to ``directory`` as the reference's Markdown file.

    Files are named by ``chunk_filename``; two chunks that would share a name (same minute,
    pair and topic) get their chunk id appended. Rows are streamed (bounded memory). Returns
    the number of files written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    rows = MemoryItem.objects.filter(source=MemoryItem.Source.CHUNK, chunk_id__isnull=False)
    if user is not None:
        rows = rows.filter(user=user)
    if platform:
        rows = rows.filter(metadata__source_platform=platform)
    if agent_id:
        rows = rows.filter(agent_id=agent_id)
    used: set[str] = set()
    written = 0
    for chunk_id, metadata, header, content in (
        rows.order_by("id").values_list("chunk_id", "metadata", "header", "content").iterator(2000)
    ):
        frontmatter = frontmatter_from_metadata(metadata or {})
        frontmatter["chunk_id"] = chunk_id
        name = chunk_filename(frontmatter)
        if name in used:
            name = f"{name[:-3]}_{chunk_id}.md"
        used.add(name)
        text = render_markdown(frontmatter=frontmatter, header=header, exchange=content)
        (directory / name).write_text(text, encoding="utf-8", newline="\n")
        written += 1
    return written


def import_summary_lines(summary: dict) -> Iterable[str]:
    """The processing summary as the reference prints it (used by the CLI)."""
    yield f"Files processed: {summary.get('files_processed', 0)}"
    yield f"Turn pairs: {summary.get('turn_pairs', 0)}"
    yield f"Chunks generated: {summary.get('chunks_generated', 0)}"
    yield f"Chunks skipped (duplicates): {summary.get('chunks_skipped_duplicates', 0)}"
    skipped = summary.get("files_skipped") or {}
    names = ", ".join(f["name"] for f in skipped.get("files", [])[:20])
    yield f"Files skipped: {skipped.get('count', 0)}" + (f" [{names}]" if names else "")
    for entry in skipped.get("files", [])[:20]:
        yield f"  - {entry['name']}: {entry['reason']}"
    errors = summary.get("errors") or {}
    yield f"Errors: {errors.get('count', 0)}"
    for entry in errors.get("files", [])[:20]:
        yield f"  - {entry['name']}: {entry['error']} ({entry['recovery']})"
    yield f"Chunks stored for this user: {summary.get('total_chunks', 0)}"
    verification = summary.get("verification") or {}
    status = "OK" if verification.get("ok") else "FAILED"
    yield (
        f"Verification: {status} (ids unique: {verification.get('chunk_ids_unique')}, "
        f"{verification.get('chunks_found', 0)}/{verification.get('chunks_reported', 0)} chunks "
        f"found, {verification.get('chunks_parsed', 0)} parse, "
        f"{verification.get('pairs_in_chunks', 0)}/{verification.get('new_pairs', 0)} new pairs "
        f"each in exactly one chunk: {verification.get('each_pair_in_one_chunk')})"
    )
