"""The importer's worker processes: redact, plan and describe rounds off the main process."""

from __future__ import annotations

import ctypes
import gc
import os
import signal
from collections.abc import Sequence

from ingestion_app.chunking.conversations import (
    Chunk,
    describe_locally,
    plan_chunks,
    redact_conversation,
)
from ingestion_app.chunking.passages import chunk_passage_texts
from ingestion_app.parsers.base import Conversation
from mnemo_text.categories import text_cues

# Cyclic-GC generation thresholds in the importer's worker processes (CPython's are 700, 10, 10).
WORKER_GC_THRESHOLDS = (20_000, 20, 100)


def prepare_worker_init() -> None:
    """Set up a worker process of the importer's pool before it runs ``prepare_conversations``.

    A worker allocates thousands of short-lived containers per round while the summarizer's
    caches hold many long-lived ones; with CPython's default thresholds the cyclic garbage
    collector rescans those every 700 allocations, which cost about a third of the worker's
    CPU. The modules loaded so far are frozen out of collection and collections run less
    often; reference counting still frees everything the worker drops, so memory stays flat.
    """
    _die_with_parent()
    gc.freeze()
    gc.set_threshold(*WORKER_GC_THRESHOLDS)


def prepare_conversations(
    work: Sequence[tuple[Conversation, frozenset[str]]],
    *,
    namespace: str,
    describe: bool = True,
) -> list[tuple[Conversation, list[Chunk]]]:
    """Redact, plan and (locally) describe the new chunks of each (conversation, covered keys),
    with their text cues and passages (not their token counts: counted when read,
    ``memory_site.tokens.stored_or_counted``).

    Pure CPU work with no database access, so the importer can run it in worker processes
    while the main process parses and stores; returns (redacted conversation, chunks) in the
    order given. With ``describe=False`` headers and topics are left for the caller (LLM).
    """
    prepared: list[tuple[Conversation, list[Chunk]]] = []
    for conversation, covered in work:
        redacted = redact_conversation(conversation)
        chunks = plan_chunks(redacted, namespace=namespace, skip_pair_keys=covered)
        if describe:
            describe_locally(chunks, redacted)
        for chunk in chunks:
            chunk.cues = text_cues(chunk.exchange_markdown())
            chunk.passages = chunk_passage_texts(chunk.pairs, chunk.assistant_override)
        prepared.append((redacted, chunks))
    return prepared


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when the process that started it dies.

    A task worker killed outright (kill -9, out of memory) cannot shut its pool down, and an
    orphaned pool worker would stay blocked on its queue; elsewhere this is a no-op.
    """
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the call took effect
            os._exit(1)
    except (OSError, AttributeError):
        pass
