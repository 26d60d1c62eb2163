"""Commit to Memory: distill a chat session's new messages into atomic facts, exactly once.

`run` holds the service (`memory_commit`: lock, read past the high-water mark, distill, dedupe,
decide, apply, move the mark, all in one transaction); `distill` turns messages into facts,
`decide` checks them against stored facts, `apply` writes facts and their history; `add`
stores one fact given as text by the same rules (`memory_fact_add`).
"""

from __future__ import annotations

from ingestion_app.services.commit.add import FactAddResult, memory_fact_add
from ingestion_app.services.commit.run import CommitResult, CommittedFact, memory_commit

__all__ = ["CommitResult", "CommittedFact", "FactAddResult", "memory_commit", "memory_fact_add"]
