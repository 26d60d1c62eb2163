"""Changes to entities after extraction: merge, edit, delete, the embedding-similarity pass
and the LLM refinement (both background tasks)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max, Min, Q
from pgvector.django import CosineDistance

from entities_app.models import CrossReference, Entity, EntityMention
from entities_app.services.entities import entities_apply_named, entity_describe
from ingestion_app.models import MemoryItem
from memory_site.errors import InvalidInput, NotFound
from memory_site.providers import get_embedder, get_llm
from memory_site.providers.base import ProviderError
from mnemo_text.entities import normalize_entity_name
from mnemo_text.entity_tokens import ENTITY_TYPES
from mnemo_text.redaction import redact
from sessions_app.services.usage import usage_record_json
from webhooks_app.services.events import ENTITY_MERGED, event_emit

logger = logging.getLogger(__name__)

MAX_MERGE = 50


def entity_merge(*, user, target_id: int, source_ids: Sequence[int]) -> Entity:
    """Fold ``source_ids`` into ``target_id``: their mentions, names (as aliases), descriptions
    (into history), counts and cross-references move; the sources are deleted.

    Raises NotFound when any id is not the user's (another user's entity is 404, never
    merged), InvalidInput for an empty or oversized list. One transaction; locks the entities.
    """
    sources = sorted({int(source) for source in source_ids} - {int(target_id)})
    if not sources:
        raise InvalidInput("Give at least one other entity to merge.", field="source_ids")
    if len(sources) > MAX_MERGE:
        raise InvalidInput(f"At most {MAX_MERGE} entities merge at once.", field="source_ids")
    with transaction.atomic():
        rows = list(
            Entity.objects.select_for_update()
            .filter(user=user, id__in=[target_id, *sources])
            .order_by("id")
        )
        by_id = {entity.id: entity for entity in rows}
        target = by_id.get(int(target_id))
        if target is None:
            raise NotFound("Entity not found.", code="entity_not_found", field="target_id")
        if any(source not in by_id for source in sources) or any(
            by_id[source].app_id != target.app_id for source in sources
        ):
            raise NotFound("Entity not found.", code="entity_not_found", field="source_ids")
        merged = [by_id[source] for source in sources]
        aliases = set(target.aliases)
        for entity in merged:
            aliases.update([entity.normalized_name, *entity.aliases])
            if entity.description and entity.description != target.description:
                if target.description:
                    target.description_history = [
                        *target.description_history,
                        {"description": entity.description, "replaced_at": None, "source": "merge"},
                    ][-20:]
                else:
                    target.description = entity.description
        aliases.discard(target.normalized_name)
        target.aliases = sorted(aliases)[:50]
        if target.type == "other":
            target.type = next((e.type for e in merged if e.type != "other"), "other")
        _move_mentions(target=target, sources=sources)
        _move_cross_references(user_id=user.id, target_id=target.id, sources=sources)
        Entity.objects.filter(id__in=sources).delete()
        _recount([target.id])
        target.save(update_fields=["aliases", "type", "description", "description_history"])
        target.refresh_from_db()
        event_emit(
            user_id=user.id,
            event=ENTITY_MERGED,
            data={
                "entity": {
                    "id": target.id,
                    "name": target.name,
                    "type": target.type,
                    "aliases": target.aliases,
                    "mention_count": target.mention_count,
                },
                "merged_ids": sources,
                "merged_names": [entity.name for entity in merged],
            },
        )
    return target


def _move_mentions(*, target: Entity, sources: list[int]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE entity_mentions AS m SET entity_id = %s
            WHERE m.entity_id = ANY(%s) AND NOT EXISTS (
                SELECT 1 FROM entity_mentions t
                WHERE t.entity_id = %s AND t.memory_id = m.memory_id AND t.kind = m.kind)
            """,
            [target.id, sources, target.id],
        )


def _move_cross_references(*, user_id: int, target_id: int, sources: list[int]) -> None:
    for side in ("source", "target"):
        links = CrossReference.objects.filter(
            user_id=user_id, **{f"{side}_type": "entity", f"{side}_id__in": sources}
        )
        for link in links:
            setattr(link, f"{side}_id", target_id)
            if link.source_type == link.target_type and link.source_id == link.target_id:
                link.delete()
                continue
            duplicate = CrossReference.objects.filter(
                user_id=user_id,
                source_type=link.source_type,
                source_id=link.source_id,
                target_type=link.target_type,
                target_id=link.target_id,
                relationship=link.relationship,
            ).exclude(id=link.id)
            if duplicate.exists():
                duplicate.update(strength=min(1000, link.strength + duplicate[0].strength))
                link.delete()
            else:
                link.save(update_fields=[f"{side}_id", "updated_at"])


def _recount(entity_ids: list[int]) -> None:
    """Each entity's mention count and first/last mention dates from its mentions' items."""
    counted = (
        EntityMention.objects.filter(entity_id__in=entity_ids)
        .values("entity_id")
        .annotate(n=Count("id"), first=Min("memory__occurred_at"), last=Max("memory__occurred_at"))
    )
    entities = [
        Entity(
            id=row["entity_id"],
            mention_count=row["n"],
            first_mentioned_at=row["first"],
            last_mentioned_at=row["last"],
        )
        for row in counted
    ]
    Entity.objects.bulk_update(
        entities, ["mention_count", "first_mentioned_at", "last_mentioned_at"]
    )


def entity_update(
    *,
    user,
    entity_id: int,
    name: str | None = None,
    type: str | None = None,  # noqa: A002 - the API field's name
    description: str | None = None,
    aliases: list[str] | None = None,
) -> Entity:
    """Edit an entity; a new description keeps the old one in its history.

    Raises NotFound for another user's entity, InvalidInput for an unknown type or a name that
    another of the user's entities already has.
    """
    with transaction.atomic():
        entity = Entity.objects.select_for_update().filter(user=user, id=entity_id).first()
        if entity is None:
            raise NotFound("Entity not found.", code="entity_not_found", field="entity_id")
        if type is not None:
            if type not in ENTITY_TYPES:
                raise InvalidInput("Unknown entity type.", field="type")
            entity.type = type
        if name is not None:
            key = normalize_entity_name(name)
            if not key:
                raise InvalidInput("The name is empty.", field="name")
            clash = Entity.objects.filter(
                user=user, app_id=entity.app_id, normalized_name=key
            ).exclude(id=entity.id)
            if clash.exists():
                raise InvalidInput(
                    "Another entity has this name; merge them instead.", field="name"
                )
            if key != entity.normalized_name:
                entity.aliases = sorted({*entity.aliases, entity.normalized_name} - {key})
            entity.name, entity.normalized_name = " ".join(name.split())[:200], key
        if aliases is not None:
            keys = {normalize_entity_name(alias) for alias in aliases} - {
                "",
                entity.normalized_name,
            }
            entity.aliases = sorted(keys)[:50]
        if description is not None and description != entity.description:
            entity_describe(entity=entity, description=redact(description), source="edit")
        entity.save()
    return entity


def entity_delete(*, user, entity_id: int) -> None:
    """Delete an entity, its mentions and its cross-references (the memories stay).

    Raises NotFound for another user's entity."""
    with transaction.atomic():
        deleted, _ = Entity.objects.filter(user=user, id=entity_id).delete()
        if not deleted:
            raise NotFound("Entity not found.", code="entity_not_found", field="entity_id")
        CrossReference.objects.filter(
            Q(source_type="entity", source_id=entity_id)
            | Q(target_type="entity", target_id=entity_id),
            user=user,
        ).delete()


def entities_embed_and_resolve(*, entity_ids: Sequence[int]) -> int:
    """Embed new entities and merge each into an older entity of the same user, app and type
    whose embedding is at least MNEMO_ENTITY_SIMILARITY similar. Returns the merges made.

    Idempotent (a merged entity is gone; an embedded one is embedded again to the same vector).
    An embedder failure leaves the entities unembedded and unmerged."""
    entities = list(Entity.objects.filter(id__in=list(entity_ids)).select_related("user"))
    if not entities:
        return 0
    try:
        vectors = get_embedder().embed([_embedding_text(entity) for entity in entities])
    except ProviderError as exc:
        logger.warning("embedding %d entities failed: %s", len(entities), exc)
        return 0
    merges = 0
    threshold = settings.MNEMO_ENTITY_SIMILARITY
    for entity, vector in zip(entities, vectors, strict=True):
        Entity.objects.filter(id=entity.id).update(embedding=vector)
        nearest = (
            Entity.objects.filter(
                user_id=entity.user_id, app_id=entity.app_id, type=entity.type, id__lt=entity.id
            )
            .exclude(embedding=None)
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")
            .first()
        )
        if nearest is not None and 1 - nearest.distance >= threshold:
            entity_merge(user=entity.user, target_id=nearest.id, source_ids=[entity.id])
            merges += 1
    return merges


def _embedding_text(entity: Entity) -> str:
    return entity.name


LLM_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["entities", "relations"],
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "type", "description", "aliases"],
                "properties": {
                    "name": {"type": "string"},
                    "type": {"type": "string", "enum": list(ENTITY_TYPES)},
                    "description": {"type": "string"},
                    "aliases": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "relations": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["source", "target", "reason"],
                "properties": {
                    "source": {"type": "string"},
                    "target": {"type": "string"},
                    "reason": {"type": "string"},
                },
            },
        },
    },
}
_LLM_PROMPT = (
    "Extract the named entities (people, pets, places, organizations, projects, products, "
    "events, concepts) from this memory of a chat with {owner}. For each: its name as written, "
    "its type, a short description of who or what it is for {owner} (under 15 words, only "
    "what the text says), and other names it goes by in the text. Then list relations between "
    "two extracted entities with a short reason. Only named things; no pronouns, no dates."
)


def entities_llm_extract(*, memory_item_id: int) -> str:
    """One structured model call for one item: better types, descriptions, aliases and
    entity-entity relations, merged into the offline extraction's entities.

    Only names the offline extractor or the model found in this item's text are touched; the
    model's text is redacted before it is stored. Returns "done", "skipped" or "failed"."""
    item = MemoryItem.objects.filter(id=memory_item_id).first()
    llm = get_llm()
    if item is None or llm.is_local or not item.content.strip():
        return "skipped"
    owner = (item.metadata or {}).get("speaker") or "the user"
    messages = [
        {"role": "system", "content": _LLM_PROMPT.format(owner=owner)},
        {"role": "user", "content": item.content[:6000]},
    ]
    try:
        result = llm.chat_json(messages, schema=LLM_SCHEMA, schema_name="entities")
    except ProviderError as exc:
        logger.warning("entity extraction of item %s failed: %s", memory_item_id, exc)
        return "failed"
    usage_record_json(
        user=item.user,
        result=result,
        kind="entities",
        session=item.chat_session,
        app_id=item.app_id,
    )
    data = result.data
    _llm_apply(item=item, data=data if isinstance(data, dict) else {})
    return "done"


def _llm_apply(*, item: MemoryItem, data: dict) -> None:
    named = []
    for raw in data.get("entities") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        name = " ".join(raw["name"].split())[:200]
        if not normalize_entity_name(name) or name.lower() not in item.content.lower():
            continue  # a name the text does not hold is a model invention
        kind = raw.get("type") if raw.get("type") in ENTITY_TYPES else "other"
        description = redact(str(raw.get("description") or ""))[:300]
        aliases = [str(alias) for alias in raw.get("aliases") or [] if isinstance(alias, str)]
        named.append((name, kind, description, aliases[:5]))
    relations = [
        (str(raw.get("source")), str(raw.get("target")), redact(str(raw.get("reason") or ""))[:300])
        for raw in data.get("relations") or []
        if isinstance(raw, dict)
    ]
    entities_apply_named(item=item, named=named, relations=relations)
