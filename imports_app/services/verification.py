"""Verification, the processing summary and the Markdown export of imported chunks."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from concurrent.futures import Executor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast, Substr

from imports_app.models import ImportFile, ImportJob
from ingestion_app.chunking.markdown import (
    DEFAULT_AGENT_ID,
    chunk_filename,
    chunks_verify,
    frontmatter_from_metadata,
    iso_utc,
    render_markdown,
)
from ingestion_app.models import MemoryItem

# Verification batches (1,000 chunks each) parsed in the pool at a time (bounds memory).
VERIFY_BATCHES_IN_FLIGHT = 4


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

    def collect(result: tuple[list[str], list[tuple[str, str, str]]]) -> None:
        bad, owners = result
        unparseable.extend(bad)
        for conversation, key, owner in owners:
            pair_owners.setdefault((conversation, key), set()).add(owner)

    def collect_oldest() -> None:
        batch, future = pending.popleft()
        try:
            collect(future.result())
        except BrokenProcessPool:
            collect(chunks_verify(batch))

    for start in range(0, len(ids), 1000):
        window = ids[start : start + 1000]
        # The metadata as JSON text: the workers decode it (this process only reads).
        batch = list(
            MemoryItem.objects.filter(user_id=job.user_id, chunk_id__in=window)
            .annotate(
                metadata_json=Cast("metadata", TextField()),
                exchange_head=Substr("content", 1, 200),
            )
            .values_list("chunk_id", "metadata_json", "header", "exchange_head")
        )
        found += len(batch)
        if pool is None:
            collect(chunks_verify(batch))
            continue
        try:
            pending.append((batch, pool.submit(chunks_verify, batch)))
        except (BrokenProcessPool, RuntimeError):  # broken or shut down: check here
            collect(chunks_verify(batch))
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
    """Write each stored memory item to ``directory`` as the reference's Markdown file: turn-pair
    chunks (live and imported), message items and passages, document chunks, summaries and
    committed facts, each with real frontmatter (`item_frontmatter`).

    Files are named by ``chunk_filename``; two items that would share a name (same minute,
    pair and topic) get their chunk id appended. Rows are streamed (bounded memory). Returns
    the number of files written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    rows = MemoryItem.objects.select_related("chat_session")
    if user is not None:
        rows = rows.filter(user=user)
    if platform:
        rows = rows.filter(metadata__source_platform=platform)
    if agent_id:
        rows = rows.filter(agent_id=agent_id)
    used: set[str] = set()
    written = 0
    for item in rows.order_by("id").iterator(2000):
        frontmatter = item_frontmatter(item)
        name = chunk_filename(frontmatter)
        if name in used:
            name = f"{name[:-3]}_{frontmatter['chunk_id']}.md"
        used.add(name)
        text = render_markdown(frontmatter=frontmatter, header=item.header, exchange=item.content)
        (directory / name).write_text(text, encoding="utf-8", newline="\n")
        written += 1
    return written


def item_kind(item: MemoryItem) -> str:
    """turn_pair | message | passage | document | fact | summary (what export calls an item)."""
    metadata = item.metadata or {}
    if item.source != MemoryItem.Source.CHUNK:
        return item.source
    if metadata.get("granularity") == "message":
        return "passage" if metadata.get("passage") else "message"
    return metadata.get("granularity") or "turn_pair"


def item_frontmatter(item: MemoryItem) -> dict:
    """The nine reference fields of any item, then its kind and provenance.

    A turn-pair chunk has them stored; other items get them from what they are: the chat
    session (file, title, turn number), the document (file name, title), the item's date
    (`occurred_at`: when it was said, never the export time)."""
    metadata = item.metadata or {}
    frontmatter = frontmatter_from_metadata(metadata)
    session = item.chat_session
    kind = item_kind(item)
    exchange = str(metadata.get("exchange_key") or "")
    defaults = {
        "source_file": (
            metadata.get("filename")
            or (f"{session.id}.md" if session is not None else "")
            or ("facts.md" if kind == "fact" else "")
        ),
        "source_platform": "document" if kind == "document" else "local",
        "model_used": metadata.get("model") or "unknown",
        "timestamp": iso_utc(item.occurred_at) or "",
        "conversation_title": (
            item.header
            if kind == "document"
            else (session.title if session is not None else "") or ""
        ),
        "turn_range": (
            exchange.rsplit(":", 1)[-1]
            if exchange
            else str(metadata.get("chunk_index", metadata.get("position", 0)))
        ),
        "chunk_id": item.chunk_id or f"{item.source}-{item.id}",
        "agent_id": item.agent_id or DEFAULT_AGENT_ID,
    }
    for key, value in defaults.items():
        if frontmatter.get(key) in (None, ""):
            frontmatter[key] = value
    frontmatter["chunk_id"] = defaults["chunk_id"]
    frontmatter["topics"] = list(frontmatter.get("topics") or item.topics or [])
    frontmatter["kind"] = kind
    frontmatter["provenance"] = metadata.get("provenance") or ""
    return frontmatter


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
