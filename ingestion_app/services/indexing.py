"""The after-message hook that makes each stored message retrievable in the request."""

from __future__ import annotations

from ingestion_app.models import MemoryItem
from ingestion_app.services.inline import exchange_prepare
from ingestion_app.services.message_index import message_item_prepare
from ingestion_app.services.pending_items import pending_items_store
from sessions_app.models import Message


def message_items_index(*, message: Message) -> list[MemoryItem]:
    """After-message hook: the message's own item and, after a reply, the exchange's turn-pair
    chunk, embedded together in one embedder call (half the request-path latency of two).

    Returns the stored (or already stored) items: none for a system message or empty text.
    """
    pending = [
        item
        for item in (exchange_prepare(message=message), message_item_prepare(message=message))
        if item is not None
    ]
    return [item for item in pending_items_store(pending) if item is not None]
