"""Data builders for the page tests: memories stored the way the services store them."""

from __future__ import annotations

import json
from datetime import datetime

from django.utils import timezone

from ingestion_app.models import FactHistory, MemoryItem
from tests.factories import chatgpt_conversation, memory_write


def store_memory(
    user,
    content: str,
    *,
    source: str = MemoryItem.Source.FACT,
    session=None,
    message_ids: list[int] | None = None,
    topics: list[str] | None = None,
    project_id: str = "",
    occurred_at: datetime | None = None,
    metadata: dict | None = None,
    header: str = "",
    embed: bool = True,
) -> MemoryItem:
    """A rag_store row written by the store's writer with a real embedding and its ADD
    history, as a commit writes it."""
    item = memory_write(
        user,
        content,
        source=source,
        header=header,
        chat_session=session,
        source_message_ids=message_ids or [],
        topics=topics or [],
        project_id=project_id,
        metadata=metadata or {},
        embedding="model" if embed else None,
        occurred_at=occurred_at or timezone.now(),
    )
    FactHistory.objects.create(
        memory=item, user=user, event=FactHistory.Event.ADD, new_content=content, reason="test"
    )
    return item


def chatgpt_export(title: str, turns: list[tuple[str, str]]) -> bytes:
    """A minimal ChatGPT `conversations.json` with one linear conversation."""
    return json.dumps([chatgpt_conversation(title, turns)]).encode()
