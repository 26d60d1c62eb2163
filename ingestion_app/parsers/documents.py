"""Text extraction for ingested documents (txt, md, json, html, pdf), per rag-pipeline.txt:
plain text passes through, JSON is pretty-printed, HTML becomes readable text, PDF text is
extracted page by page. The type comes from the MIME type, else the file name, else content.
"""

from __future__ import annotations

import codecs
import io
import json

from pypdf import PdfReader

from .base import normalize_text
from .htmltext import html_to_text

SUPPORTED_TYPES = {
    "text/plain": (".txt", ".text", ".log"),
    "text/markdown": (".md", ".markdown"),
    "application/json": (".json",),
    "text/html": (".html", ".htm"),
    "application/pdf": (".pdf",),
}
_ALIASES = {"text/x-markdown": "text/markdown", "application/xhtml+xml": "text/html"}


class UnsupportedDocument(ValueError):
    """The bytes are not a supported document type or cannot be read as one."""


def document_type(*, filename: str = "", mime_type: str = "", data: bytes = b"") -> str:
    """The canonical MIME type of a document from its declared type, name or first bytes."""
    declared = _ALIASES.get((mime_type or "").split(";")[0].strip().lower(), "")
    declared = declared or (mime_type or "").split(";")[0].strip().lower()
    if declared in SUPPORTED_TYPES:
        return declared
    lowered = (filename or "").lower()
    for kind, extensions in SUPPORTED_TYPES.items():
        if lowered.endswith(extensions):
            return kind
    head = data[:1024].lstrip()
    if head.startswith(b"%PDF"):
        return "application/pdf"
    if head[:15].lower().startswith((b"<!doctype html", b"<html")):
        return "text/html"
    if head[:1] in (b"{", b"["):
        return "application/json"
    if declared.startswith("text/") or not declared or declared == "application/octet-stream":
        return "text/plain"
    raise UnsupportedDocument(
        f"unsupported document type {mime_type!r}: use txt, md, json, html or pdf"
    )


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM), UTF-16 with BOM, else Windows-1252 as a last resort."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def extract_text(data: bytes, *, kind: str) -> str:
    """Readable text of a document of the given canonical type; raises UnsupportedDocument."""
    if kind == "application/pdf":
        try:
            reader = PdfReader(io.BytesIO(data))
            pages = [page.extract_text() or "" for page in reader.pages]
        except Exception as exc:  # a hostile PDF breaks pypdf in many ways; all are the file's
            raise UnsupportedDocument(f"cannot read the PDF: {exc}") from exc
        return normalize_text("\n\n".join(p.strip() for p in pages if p.strip()))
    text = decode_text(data)
    if kind == "application/json":
        try:
            return normalize_text(json.dumps(json.loads(text), indent=2, ensure_ascii=False))
        except ValueError as exc:
            raise UnsupportedDocument(f"invalid JSON: {exc}") from exc
    if kind == "text/html":
        return normalize_text(html_to_text(text))
    return normalize_text(text)
