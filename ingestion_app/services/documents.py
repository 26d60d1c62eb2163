"""Document ingestion (rag-pipeline.txt): extract -> redact -> chunk -> embed -> store.

The whole text is redacted before chunking, so a secret can never be split across a chunk
boundary and escape detection; chunk offsets are then mapped back to the original text, which
is what ``start_offset``/``end_offset`` refer to (the original slice is kept encrypted as the
chunk's ``raw_content``). Embeddings are computed in batches before anything is written; the
document and its chunks are stored in one transaction.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict

from django.conf import settings
from django.db import transaction

from ingestion_app.chunking.documents import ChunkingOptions, chunk_document
from ingestion_app.models import Document, MemoryItem
from ingestion_app.parsers.documents import UnsupportedDocument, document_type, extract_text
from ingestion_app.services.memory_store import (
    MemoryScope,
    memory_item_build,
    memory_items_bulk_create,
    memory_items_embed,
)
from memory_site.errors import InvalidInput, UpstreamError
from memory_site.providers import ProviderError
from mnemo_text.redaction import PLACEHOLDERS, redact, redact_with_findings


class OffsetMap:
    """Maps positions in redacted text back to the original text.

    Built from the redaction findings: outside a replaced span the two texts differ by a
    constant shift; a position inside a placeholder maps to the start (for a chunk start) or
    the end (for a chunk end) of the original span it replaced.
    """

    def __init__(self, original: str, findings, placeholders: dict[str, str]) -> None:
        self.redacted_starts: list[int] = []
        self.redacted_ends: list[int] = []
        self.original_starts: list[int] = []
        self.original_ends: list[int] = []
        shift = 0
        for finding in findings:
            placeholder = placeholders[finding.kind]
            start = finding.start + shift
            self.redacted_starts.append(start)
            self.redacted_ends.append(start + len(placeholder))
            self.original_starts.append(finding.start)
            self.original_ends.append(finding.end)
            shift += len(placeholder) - (finding.end - finding.start)
        self.length = len(original)

    def to_original(self, position: int, *, is_end: bool) -> int:
        index = bisect.bisect_right(self.redacted_starts, position) - 1
        if index < 0:
            return position
        if position == self.redacted_starts[index]:
            return self.original_starts[index]
        if position < self.redacted_ends[index]:
            # inside a placeholder: widen to the whole original span
            return self.original_ends[index] if is_end else self.original_starts[index]
        return self.original_ends[index] + (position - self.redacted_ends[index])


def document_ingest(
    *,
    user,
    text: str | None = None,
    data: bytes | None = None,
    filename: str = "",
    mime_type: str = "",
    title: str = "",
    options: dict | None = None,
    app_id: str | None = None,
    project_id: str = "",
    agent_id: str = "",
) -> tuple[Document, bool]:
    """Ingest a document given as text or file bytes; returns (document, created).

    Idempotent: the same text with the same options for the same user returns the existing
    document (created=False). Raises InvalidInput (no content, unsupported type, bad options,
    empty text) and UpstreamError (embedder failed; nothing stored).
    """
    kind, body = document_text_extract(
        text=text, data=data, filename=filename, mime_type=mime_type, options=options
    )
    return document_ingest_text(
        user=user,
        body=body,
        kind=kind,
        filename=filename,
        title=title,
        options=options,
        app_id=app_id,
        project_id=project_id,
        agent_id=agent_id,
    )


def document_text_extract(
    *,
    text: str | None = None,
    data: bytes | None = None,
    filename: str = "",
    mime_type: str = "",
    options: dict | None = None,
) -> tuple[str, str]:
    """The document's canonical type and text: the checks a request can answer at once.

    Raises InvalidInput when neither or both of text and data are given, the options are bad,
    the type is unsupported, the file cannot be read (a broken PDF) or there is no text.
    """
    if (text is None) == (data is None):
        raise InvalidInput("Send either 'text' or a 'file'.", field="text")
    _chunking_options(options)
    if data is not None:
        try:
            kind = document_type(filename=filename, mime_type=mime_type, data=data)
            body = extract_text(data, kind=kind)
        except UnsupportedDocument as exc:
            raise InvalidInput(str(exc), field="file") from exc
    else:
        kind = _declared_kind(filename=filename, mime_type=mime_type)
        try:
            body = extract_text(text.encode("utf-8"), kind=kind) if kind != "text/plain" else text
        except UnsupportedDocument as exc:
            raise InvalidInput(str(exc), field="text") from exc
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    if not body.strip():
        raise InvalidInput("The document has no text to ingest.", field="text")
    return kind, body


def document_request_check(
    *,
    text: str | None = None,
    head: bytes | None = None,
    size: int = 0,
    filename: str = "",
    mime_type: str = "",
    options: dict | None = None,
) -> str:
    """The document's canonical type, from what a request can check without parsing it.

    ``head`` is the first KiB of an uploaded file (None for a text body), ``size`` its length.
    Reading the content (a PDF, HTML, JSON) is left to the worker (``document_text_extract``),
    so the request answers at once whatever the file. Raises InvalidInput when neither or both
    of text and file are given, the options are bad, the type is unsupported, the file is empty,
    the text is blank, or a text body is declared as a PDF (a PDF must be sent as a file).
    """
    if (text is None) == (head is None):
        raise InvalidInput("Send either 'text' or a 'file'.", field="text")
    _chunking_options(options)
    if head is not None:
        try:
            kind = document_type(filename=filename, mime_type=mime_type, data=head)
        except UnsupportedDocument as exc:
            raise InvalidInput(str(exc), field="file") from exc
        if size <= 0:
            raise InvalidInput("The file is empty.", field="file")
        return kind
    kind = _declared_kind(filename=filename, mime_type=mime_type)
    if kind == "application/pdf":
        raise InvalidInput("Send a PDF as a file, not as text.", field="mime_type")
    if not text.strip():
        raise InvalidInput("The document has no text to ingest.", field="text")
    return kind


def _chunking_options(options: dict | None) -> ChunkingOptions:
    try:
        return ChunkingOptions(**_option_kwargs(options or {}))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(str(exc), field="options") from exc


def document_ingest_text(
    *,
    user,
    body: str,
    kind: str,
    filename: str = "",
    title: str = "",
    options: dict | None = None,
    app_id: str | None = None,
    project_id: str = "",
    agent_id: str = "",
    checkpoint: Callable[[int, int], None] | None = None,
) -> tuple[Document, bool]:
    """Redact, chunk, embed and store extracted text (``document_text_extract``).

    Idempotent by content hash (text + options), like ``document_ingest``. ``checkpoint(done,
    total)`` is called with the chunks embedded so far before each batch and once at the end;
    whatever it raises (a cancelled job) stops the work before anything is stored. Raises
    UpstreamError when the embedder fails (nothing stored).
    """
    chunking = _chunking_options(options)
    option_values = asdict(chunking)
    content_hash = hashlib.sha256(
        (body + "\x00" + json.dumps(option_values, sort_keys=True)).encode("utf-8")
    ).hexdigest()
    existing = Document.objects.filter(user=user, content_hash=content_hash).first()
    if existing is not None:
        return existing, False

    redaction = redact_with_findings(body)
    offsets = OffsetMap(body, redaction.findings, PLACEHOLDERS)
    pieces = chunk_document(redaction.text, chunking)
    safe_title = redact(title.strip()) if title else ""
    display_title = safe_title or filename or _first_words(redaction.text)
    scope = MemoryScope(
        user_id=user.pk,
        app_id=app_id or settings.MNEMO_DEFAULT_APP_ID,
        project_id=project_id or "",
        agent_id=agent_id or "",
    )
    items: list[MemoryItem] = []
    for piece in pieces:
        start = offsets.to_original(piece.start_offset, is_end=False)
        end = offsets.to_original(piece.end_offset, is_end=True)
        items.append(
            memory_item_build(
                scope=scope,
                source=MemoryItem.Source.DOCUMENT,
                content=piece.text,
                header=display_title,
                raw_content=body[start:end],
                embedding_text=f"{display_title}\n\n{piece.text}",
                metadata={
                    "filename": filename,
                    "mime_type": kind,
                    "chunk_index": piece.index,
                    "total_chunks": piece.total,
                    "start_offset": start,
                    "end_offset": end,
                    "strategy": piece.strategy,
                    # A document chunk is already a passage (at most max_chunk_size
                    # characters); offsets are into the document's text.
                    "passage": {
                        "index": piece.index,
                        "count": piece.total,
                        "start": start,
                        "end": end,
                    },
                },
            )
        )
    batch_size = max(int(settings.EMBEDDING_BATCH_SIZE), 1)
    try:
        for start in range(0, len(items), batch_size):
            if checkpoint is not None:
                checkpoint(start, len(items))
            memory_items_embed(items[start : start + batch_size])
        if checkpoint is not None:
            checkpoint(len(items), len(items))
    except ProviderError as exc:
        raise UpstreamError(
            f"The embedding model failed; the document was not stored. ({exc})",
            code="embedding_failed",
        ) from exc
    with transaction.atomic():
        document = Document.objects.create(
            user=user,
            app_id=app_id or settings.MNEMO_DEFAULT_APP_ID,
            project_id=project_id or "",
            agent_id=agent_id or "",
            title=display_title[:500],
            filename=filename[:500],
            mime_type=kind,
            content_hash=content_hash,
            text_length=len(body),
            strategy=chunking.strategy,
            options=option_values,
            chunk_count=len(items),
        )
        for item in items:
            item.metadata["document_id"] = str(document.id)
            item.chunk_id = f"doc-{document.id}-{item.metadata['chunk_index']}"
        memory_items_bulk_create(items, batch_size=500)
    return document, True


def document_chunks(*, document: Document) -> list[MemoryItem]:
    """The stored chunks of a document in order."""
    return sorted(
        MemoryItem.objects.filter(
            user_id=document.user_id,
            source=MemoryItem.Source.DOCUMENT,
            metadata__document_id=str(document.id),
        ).defer("embedding"),
        key=lambda item: item.metadata.get("chunk_index", 0),
    )


_OPTION_NAMES = {
    "strategy": "strategy",
    "max_chunk_size": "max_chunk_size",
    "maxChunkSize": "max_chunk_size",
    "min_chunk_size": "min_chunk_size",
    "minChunkSize": "min_chunk_size",
    "overlap": "overlap",
}


def _option_kwargs(options: dict) -> dict:
    unknown = [key for key in options if key not in _OPTION_NAMES]
    if unknown:
        raise ValueError(f"unknown option(s): {', '.join(sorted(unknown))}")
    kwargs = {}
    for key, value in options.items():
        name = _OPTION_NAMES[key]
        if name != "strategy" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{key} must be an integer")
        if name == "strategy" and not isinstance(value, str):
            raise ValueError("strategy must be a string")
        kwargs[name] = value
    return kwargs


def _declared_kind(*, filename: str, mime_type: str) -> str:
    try:
        return document_type(filename=filename, mime_type=mime_type)
    except UnsupportedDocument as exc:
        raise InvalidInput(str(exc), field="mime_type") from exc


def _first_words(text: str, limit: int = 80) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "Untitled document")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
