"""The after-message hook that makes each stored message retrievable in the request."""

from __future__ import annotations

from django.conf import settings

from ingestion_app.models import MemoryItem
from ingestion_app.services.inline import exchange_prepare
from ingestion_app.services.message_index import message_items_prepare
from ingestion_app.services.pending_items import pending_items_store
from sessions_app.models import Message


def message_items_index(*, message: Message) -> list[MemoryItem]:
    """After-message hook: the message's own items (one, or its passages) and, after a reply,
    the exchange's turn-pair chunk, all embedded in one embedder call (one round trip).

    With MNEMO_EMBED_AFTER_RESPONSE (the default) the embedding runs after the response, in the
    process's embedding thread: the items are stored without a vector (keyword-searchable at
    once) and get it a few milliseconds later (`deferred_embeddings`). Returns the stored (or
    already stored) items: none for a system message or empty text.
    """
    exchange = exchange_prepare(message=message)
    pending = [
        *([exchange] if exchange is not None else []),
        *message_items_prepare(message=message),
    ]
    return [
        item
        for item in pending_items_store(pending, defer=settings.MNEMO_EMBED_AFTER_RESPONSE)
        if item is not None
    ]
