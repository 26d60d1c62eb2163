"""The context pack: what Mnemo knows about the user, prepended to a turn as one system message.

`prepare_context` assembles up to four segments from the user's stored memory:

    [Recent context]      the user rollup of the last ~28 days
    [Long-term history]   the older folded digest
    [Topic: <Title>]      the summary of the conversation's topic (inferred or overridden)
    [Relevant memories]   stored facts/chunks/summaries most similar to this turn
    [Known entities]      people, pets, places... this turn or those memories name

Guarantees: the pack never exceeds the hard character cap (nor its share of the turn's
tokens); every cut falls on a line or sentence boundary and is annotated; everything in it is
redacted text presented as quoted data, not instructions. Every prepared pack is written to the
InjectionLog and its hash to the session's metadata. A failing or slow build never fails the
turn: the caller gets an empty pack (status "failed") and the reply goes out unaugmented.

Modules: `segments` (text, fitting, attachments, the ContextPack result), `refresh` (policy
and the refresh decision), `build` (the build within its budget and its record), `prepare` (the entry point: reuse,
rebuild or skip, and never raising), `snapshots`
(reads of recorded packs).
"""

from __future__ import annotations

from context_app.services.context_pack.build import (
    QueryEmbedding,
    query_embedding_start,
)
from context_app.services.context_pack.prepare import context_pack_record, prepare_context
from context_app.services.context_pack.refresh import context_opted_out
from context_app.services.context_pack.segments import (
    MIN_SEGMENT_CHARS,
    PREAMBLE,
    TRUNCATION_MARK,
    AttachmentBlock,
    ContextPack,
    Segment,
    as_quoted_data,
    attachments_block,
    clip_text,
    fit_segments,
    max_pack_tokens,
    pack_hash,
    render_pack,
)
from context_app.services.context_pack.snapshots import (
    session_context_last,
    user_context_snapshot,
)

__all__ = [
    "MIN_SEGMENT_CHARS",
    "PREAMBLE",
    "QueryEmbedding",
    "TRUNCATION_MARK",
    "AttachmentBlock",
    "ContextPack",
    "Segment",
    "as_quoted_data",
    "attachments_block",
    "clip_text",
    "context_pack_record",
    "context_opted_out",
    "fit_segments",
    "max_pack_tokens",
    "pack_hash",
    "prepare_context",
    "query_embedding_start",
    "render_pack",
    "session_context_last",
    "user_context_snapshot",
]
