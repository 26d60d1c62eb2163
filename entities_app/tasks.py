"""Thin django-q2 task entry points for entities_app (load by id, call a service)."""

from __future__ import annotations

import logging

from entities_app.services.entity_edits import entities_embed_and_resolve, entities_llm_extract

logger = logging.getLogger(__name__)


def entities_resolve_task(entity_ids: list[int]) -> int:
    """Embed new entities and merge near-duplicates (logged, not raised, like the backfill)."""
    try:
        return entities_embed_and_resolve(entity_ids=[int(entity_id) for entity_id in entity_ids])
    except Exception:
        logger.exception("entity resolution of %s failed", entity_ids)
        return 0


def entities_llm_extract_task(memory_item_id: int) -> str:
    """The model's entities, descriptions and relations for one item (see entity_edits)."""
    try:
        return entities_llm_extract(memory_item_id=int(memory_item_id))
    except Exception:
        logger.exception("entity extraction of item %s failed", memory_item_id)
        return "failed"
