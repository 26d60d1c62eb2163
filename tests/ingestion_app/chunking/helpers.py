"""Shared helpers of the chunking tests: a timestamped conversation from (user, reply) pairs."""

from __future__ import annotations

from datetime import UTC, datetime

from ingestion_app.parsers.base import Conversation, TurnPair


def conversation_of(exchanges: list[tuple[str, str]], **fields) -> Conversation:
    start = datetime(2024, 3, 13, 14, 0, tzinfo=UTC)
    pairs = [
        TurnPair(
            index=i,
            user_text=user,
            assistant_text=assistant,
            user_at=start.replace(minute=i),
            model="gpt-4o",
        )
        for i, (user, assistant) in enumerate(exchanges, start=1)
    ]
    defaults = dict(
        platform="chatgpt",
        format="chatgpt",
        conversation_id="conv-1",
        source_file="conversations.json",
        title="Ponds and forests",
        model="gpt-4o",
    )
    defaults.update(fields)
    return Conversation(pairs=pairs, **defaults)


def turn_ranges(chunks) -> list[str]:
    return [c.turn_range for c in chunks]
