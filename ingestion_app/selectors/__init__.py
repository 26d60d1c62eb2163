"""Reads of the rag_store, always scoped to the caller.

memories: browsing, one item and its history, nearest facts, commit bookkeeping, totals, the
vector literal every vector query sends. Search itself (its scope, candidate SQL, fusion,
ranking, display) is the `retrieval` package's; the entity graph's reads are
entities_app.selectors.
"""

from __future__ import annotations

from ingestion_app.selectors.memories import (
    FactNeighbour,
    commit_log_for_session,
    countable_memories,
    facts_nearest,
    facts_nearest_many,
    memories_for_user,
    memories_matching_before,
    memory_count_by_session,
    memory_count_by_source,
    memory_get_for_user,
    memory_history,
    memory_stats,
    memory_topics_most_used,
    session_project_id,
    vector_literal,
)

__all__ = [
    "FactNeighbour",
    "commit_log_for_session",
    "countable_memories",
    "facts_nearest",
    "facts_nearest_many",
    "memories_for_user",
    "memories_matching_before",
    "memory_count_by_session",
    "memory_count_by_source",
    "memory_get_for_user",
    "memory_history",
    "memory_stats",
    "memory_topics_most_used",
    "session_project_id",
    "vector_literal",
]
