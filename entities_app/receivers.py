"""The entity layer's side of the store's announcements (ingestion_app.signals)."""

from __future__ import annotations

from collections.abc import Sequence

from entities_app.services.entities import entities_extract


def memory_items_written_extract(sender, *, items: Sequence, **kwargs) -> None:
    """The entities, mentions, cross-references and buckets of items just written, in the
    writer's transaction (``entities_extract``)."""
    entities_extract(items=items)
