"""Commit to Memory: distill a chat session's new messages into atomic facts, exactly once.

`run` holds the service (`memory_commit`: lock, read past the high-water mark, distill, dedupe,
decide, apply, move the mark, all in one transaction); `distill` turns messages into facts,
`decide` checks them against stored facts, `apply` writes facts and their history.
"""

from __future__ import annotations

from ingestion_app.services.commit.run import CommitResult, CommittedFact, memory_commit

__all__ = ["CommitResult", "CommittedFact", "memory_commit"]
