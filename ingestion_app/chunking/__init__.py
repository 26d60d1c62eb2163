"""Turn pairs into retrievable chunks (Layer 3), their Markdown form, and document chunking.

Modules: ``conversations`` (redaction, merge/split rules, chunk plans, local headers and
tags), ``markdown`` (stable chunk ids, the reference frontmatter, the Markdown file and its
parser), ``workers`` (the importer's worker processes) and ``documents`` (the rag-pipeline
strategies ``paragraph``, ``sentence``, ``fixed`` and ``semantic``). The names below are the
package's public interface.
"""

from __future__ import annotations

from ingestion_app.chunking.conversations import (
    HEADER_ASSISTANT_CHARS,
    HEADER_USER_CHARS,
    MAX_CHUNK_WORDS,
    MAX_PAIRS_PER_CHUNK,
    Chunk,
    chunk_conversation,
    describe_locally,
    group_pairs,
    local_header,
    local_tags,
    pair_key,
    plan_chunks,
    redact_conversation,
    split_reply,
)
from ingestion_app.chunking.documents import (
    STRATEGIES,
    ChunkingOptions,
    DocumentChunk,
    chunk_document,
)
from ingestion_app.chunking.markdown import (
    DEFAULT_AGENT_ID,
    FRONTMATTER_FIELDS,
    ChunkFormatError,
    build_frontmatter,
    chunk_filename,
    chunk_markdown,
    chunks_unparseable,
    chunks_verify,
    conversation_key,
    dump_frontmatter,
    frontmatter_from_metadata,
    make_chunk_id,
    parse_markdown,
    render_markdown,
    turn_range_of,
)
from ingestion_app.chunking.workers import prepare_conversations, prepare_worker_init

__all__ = [
    "DEFAULT_AGENT_ID",
    "FRONTMATTER_FIELDS",
    "HEADER_ASSISTANT_CHARS",
    "HEADER_USER_CHARS",
    "MAX_CHUNK_WORDS",
    "MAX_PAIRS_PER_CHUNK",
    "STRATEGIES",
    "Chunk",
    "ChunkFormatError",
    "ChunkingOptions",
    "DocumentChunk",
    "build_frontmatter",
    "chunk_conversation",
    "chunk_document",
    "chunk_filename",
    "chunk_markdown",
    "chunks_unparseable",
    "chunks_verify",
    "conversation_key",
    "describe_locally",
    "dump_frontmatter",
    "frontmatter_from_metadata",
    "group_pairs",
    "local_header",
    "local_tags",
    "make_chunk_id",
    "pair_key",
    "parse_markdown",
    "plan_chunks",
    "prepare_conversations",
    "prepare_worker_init",
    "redact_conversation",
    "render_markdown",
    "split_reply",
    "turn_range_of",
]
