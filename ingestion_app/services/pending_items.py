"""Retrieval items built in the request that still need their embedding.

After an assistant reply two items are written (its turn-pair chunk and its own message item).
Building them is cheap; embedding is not. Each builder returns a PendingItem, and
`pending_items_store` embeds all of them in ONE embedder call (the local embedder spreads a
batch over the cores; a remote one makes one HTTP round trip instead of two) before storing;
or, with ``defer=True`` (the after-message hook, MNEMO_EMBED_AFTER_RESPONSE), stores them
without a vector and leaves the embedding to `deferred_embeddings` after the commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import transaction

from ingestion_app.models import MemoryItem
from ingestion_app.services.deferred_embeddings import embeddings_after_commit
from ingestion_app.signals import memory_items_written
from memory_site.providers import get_embedder
from memory_site.providers.base import ProviderError

logger = logging.getLogger(__name__)


@dataclass
class PendingItem:
    """An item ready to store once embedded, or one that is already stored (`existing`).

    store(embedding, deferred=...) writes the item. It gets None when the embedder failed
    (deferred=False: the item must stay findable by keywords and arrange for its embedding to be
    filled in later) or when the embedding is deferred (deferred=True: it is already arranged).
    """

    embedding_text: str = ""
    store: Callable[..., MemoryItem | None] | None = None
    existing: MemoryItem | None = None


def pending_items_store(
    items: Sequence[PendingItem], *, defer: bool = False
) -> list[MemoryItem | None]:
    """Embed the new items in one call, then store each; already stored ones are returned as is.

    The stores and the entity extraction run in one transaction (each store keeps its own
    savepoint, so a concurrent duplicate still resolves to the first writer's item). An
    embedder failure stores every new item without an embedding rather than losing it. With
    `defer`, the new items are stored without one and queued, on commit, for the process's
    embedding thread (`deferred_embeddings.embeddings_after_commit`).
    """
    new = [item for item in items if item.existing is None]
    vectors: list[list[float] | None] = [None] * len(new)
    if new and not defer:
        try:
            vectors = list(get_embedder().embed([item.embedding_text for item in new]))
        except ProviderError as exc:
            logger.warning("embedding %d new items failed, stored without: %s", len(new), exc)
    next_vector = iter(vectors)
    # One commit for the reply's items and their entities instead of one each: on the request
    # path after a reply each commit is a WAL flush the user waits for. No savepoint
    # of its own when called inside a transaction: each store has one already.
    with transaction.atomic(savepoint=False):
        stored = [
            item.existing
            if item.existing is not None
            else item.store(next(next_vector), deferred=defer)
            for item in items
        ]
        extract = [
            item for item, pending in zip(stored, items, strict=True) if pending.existing is None
        ]
        try:
            with transaction.atomic():  # a savepoint: a failed extraction keeps the items
                memory_items_written.send(sender=MemoryItem, items=extract)
        except Exception:
            logger.exception("entity extraction of %d new items failed", len(extract))
        if defer:
            embeddings_after_commit([item for item in extract if item.embedding is None])
    return stored
