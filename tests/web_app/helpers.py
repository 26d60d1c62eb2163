"""Data builders for the page tests: memories stored the way the services store them."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

from django.utils import timezone

from ingestion_app.models import FactHistory, MemoryItem
from memory_site.providers import get_embedder
from tests.factories import chatgpt_conversation


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
    """A rag_store row with a real embedding and its ADD history, as a commit writes it."""
    item = MemoryItem.objects.create(
        user=user,
        source=source,
        content=content,
        header=header,
        chat_session=session,
        source_message_ids=message_ids or [],
        topics=topics or [],
        project_id=project_id,
        metadata=metadata or {},
        embedding=get_embedder().embed([content])[0] if embed else None,
        content_hash=hashlib.sha256(content.casefold().encode()).hexdigest(),
        token_count=len(content.split()),
        occurred_at=occurred_at or timezone.now(),
    )
    FactHistory.objects.create(
        memory=item, user=user, event=FactHistory.Event.ADD, new_content=content, reason="test"
    )
    return item


def chatgpt_export(title: str, turns: list[tuple[str, str]]) -> bytes:
    """A minimal ChatGPT `conversations.json` with one linear conversation."""
    return json.dumps([chatgpt_conversation(title, turns)]).encode()
