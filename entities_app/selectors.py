"""Reads of the entity graph, always scoped to the caller: the entity leg of retrieval
(entities a query names and the items that mention them), entity lists and pages, the
cross-references of items."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection
from django.db.models import Case, F, Func, Q, QuerySet, TextField, Value, When

from entities_app.models import CrossReference, Entity, EntityMention
from ingestion_app.models import MemoryItem
from memory_site.errors import NotFound
from mnemo_text.entities import normalize_entity_name
from mnemo_text.entity_names import NAME_WORDS_AFTER_RELATION
from mnemo_text.entity_tokens import entity_prompt_line
from mnemo_text.words import STOP_WORDS

MAX_QUERY_NGRAMS = 300
_QUERY_WORD_RE = re.compile(r"[\w&+#-]+(?:['’]s)?")


@dataclass(frozen=True)
class QueryEntity:
    id: int
    name: str
    type: str
    description: str
    mention_count: int
    normalized_name: str
    aliases: list[str]

    def prompt_line(self) -> str:
        return entity_prompt_line(self.type, self.name, self.aliases, self.description)


def query_name_keys(query: str) -> list[str]:
    """Normalized 1-3 word spans of a query that could name an entity or an alias
    ("Ines's wedding" -> "ines", "ines wedding", "wedding"; "my sister" -> "my sister")."""
    words = [normalize_entity_name(word) for word in _QUERY_WORD_RE.findall(query[:2000])]
    words = [word for word in words if word]
    keys: list[str] = []
    seen: set[str] = set()
    for size in (1, 2, 3):
        for start in range(len(words) - size + 1):
            span = words[start : start + size]
            # A name that is also a common word ("will", "may", "june") names nobody alone:
            # "my son Will" is found by his relation, not by every "will".
            if size == 1 and (
                span[0] in STOP_WORDS or len(span[0]) < 2 or span[0] in NAME_WORDS_AFTER_RELATION
            ):
                continue
            if span[0] in STOP_WORDS and span[0] not in {"my", "our"} or span[-1] in STOP_WORDS:
                continue
            key = " ".join(span)
            if key not in seen:
                seen.add(key)
                keys.append(key)
    return keys[:MAX_QUERY_NGRAMS]


def entities_of_items(*, user_id: int, item_ids: list[int], limit: int = 10) -> list[QueryEntity]:
    """The entities the given items name (text mentions), most mentioned first."""
    if not item_ids:
        return []
    rows = (
        Entity.objects.filter(
            user_id=user_id, mentions__memory_id__in=item_ids, mentions__kind="text"
        )
        .distinct()
        .order_by("-mention_count", "id")
        .values_list(
            "id", "name", "type", "description", "mention_count", "normalized_name", "aliases"
        )[:limit]
    )
    return [QueryEntity(*row) for row in rows]


def entities_mentioned_in_buckets(
    *, user_id: int, entity_ids: list[int], buckets: list[str]
) -> set[int]:
    """Those of the given entities with a mention in an item of one of ``buckets``."""
    return set(
        EntityMention.objects.filter(
            user_id=user_id, entity_id__in=entity_ids, memory__bucket__in=buckets
        )
        .values_list("entity_id", flat=True)
        .distinct()
    )


def entities_for_context(
    *, user_id: int, app_id: str, query: str, item_ids: list[int], limit: int
) -> list[QueryEntity]:
    """The context pack's "Known entities" in one statement: those the query names (most
    mentioned first), then those the given items name; the same entities and order as
    `entity_leg`'s followed by `entities_of_items`, in one round trip instead of two ORM
    queries on the path before a reply's first token."""
    keys = query_name_keys(query)
    if not keys and not item_ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH named AS (
                SELECT id FROM entities
                WHERE user_id = %(user)s AND app_id = %(app)s AND mention_count > 0
                  AND (normalized_name = ANY(%(keys)s) OR aliases && %(keys)s::varchar[])
                ORDER BY mention_count DESC, id LIMIT %(limit)s
            ), of_items AS (
                SELECT DISTINCT entity_id AS id FROM entity_mentions
                WHERE memory_id = ANY(%(items)s) AND kind = 'text'
            )
            SELECT e.id, e.name, e.type, e.description, e.mention_count, e.normalized_name,
                   e.aliases
            FROM entities AS e
            WHERE e.user_id = %(user)s
              AND (e.id IN (SELECT id FROM named) OR e.id IN (SELECT id FROM of_items))
            ORDER BY e.id IN (SELECT id FROM named) DESC, e.mention_count DESC, e.id
            LIMIT %(limit)s
            """,
            {"user": user_id, "app": app_id, "keys": keys, "items": item_ids, "limit": limit},
        )
        return [QueryEntity(*row) for row in cursor.fetchall()]


def cross_references_of_items(
    *, user_id: int, item_ids: list[int], per_item: int = 5
) -> dict[int, list[dict]]:
    """Item -> its links to other items and to entities, either direction ("outgoing" when
    the item is the link's source: the newer memory of an "updates" link), "updates" first,
    then the strongest."""
    if not item_ids:
        return {}
    links = (
        CrossReference.objects.filter(
            Q(source_type="item", source_id__in=item_ids)
            | Q(target_type="item", target_id__in=item_ids),
            user_id=user_id,
        )
        .annotate(
            first=Case(
                When(relationship=CrossReference.Relationship.UPDATES, then=Value(0)),
                default=Value(1),
            )
        )
        .order_by("first", "-strength", "-id")[: 20 * len(item_ids)]
    )
    links = list(links)
    # A link to a memory deleted since (links are not removed with the rows they join).
    linked_items = {
        link_id
        for link in links
        for link_type, link_id in (
            (link.source_type, link.source_id),
            (link.target_type, link.target_id),
        )
        if link_type == "item"
    }
    existing = set(
        MemoryItem.objects.filter(user_id=user_id, id__in=linked_items).values_list("id", flat=True)
    )
    wanted = set(item_ids)
    found: dict[int, list[dict]] = {item_id: [] for item_id in item_ids}
    for link in links:
        for own_type, own_id, other_type, other_id, direction in (
            (link.source_type, link.source_id, link.target_type, link.target_id, "outgoing"),
            (link.target_type, link.target_id, link.source_type, link.source_id, "incoming"),
        ):
            if other_type == "item" and other_id not in existing:
                continue
            if own_type == "item" and own_id in wanted and len(found[own_id]) < per_item:
                found[own_id].append(
                    {
                        "relationship": link.relationship,
                        "direction": direction,
                        "type": other_type,
                        "id": other_id,
                        "reason": link.reason,
                        "strength": link.strength,
                    }
                )
    return found


# How the memory page names each link, seen from the memory (outgoing) or from the other end.
_LINK_WORDS = {
    ("updates", "outgoing"): "Updates",
    ("updates", "incoming"): "Updated by",
    ("follows_up", "outgoing"): "Follows up on",
    ("follows_up", "incoming"): "Followed up by",
    ("mentions_same_entity", "outgoing"): "Names the same as",
    ("mentions_same_entity", "incoming"): "Names the same as",
    ("related", "outgoing"): "Related to",
    ("related", "incoming"): "Related to",
}


def memory_links(*, memory: MemoryItem, limit: int = 10) -> list[dict]:
    """The memory page's linked memories: each link in words ("Updated by"), its reason and
    the other memory (its id, date and text), "updates" first. Links to entities are left to
    the entity pages."""
    links = cross_references_of_items(user_id=memory.user_id, item_ids=[memory.id], per_item=limit)
    items = [link for link in links.get(memory.id, []) if link["type"] == "item"]
    others = {
        other.id: other
        for other in MemoryItem.objects.filter(
            user_id=memory.user_id, id__in=[link["id"] for link in items]
        ).only("id", "content", "occurred_at", "source")
    }
    return [
        {
            **link,
            "words": _LINK_WORDS.get((link["relationship"], link["direction"]), "Linked to"),
            "memory": others[link["id"]],
        }
        for link in items
        if link["id"] in others
    ]


def entities_for_user(
    *,
    user,
    app_id: str | None = None,
    type: str | None = None,  # noqa: A002 - the API filter's name
    bucket: str | None = None,
    q: str | None = None,
) -> QuerySet[Entity]:
    """The caller's entities, most mentioned first; `bucket` keeps those mentioned in an item
    of that bucket, `q` matches a substring of the normalized name or of an alias ("costa"
    finds Anna, also called "anna costa")."""
    queryset = Entity.objects.filter(user=user).defer("embedding")
    if app_id:
        queryset = queryset.filter(app_id=app_id)
    if type:
        queryset = queryset.filter(type=type)
    if bucket:
        queryset = queryset.filter(
            id__in=EntityMention.objects.filter(user=user, memory__bucket=bucket).values(
                "entity_id"
            )
        )
    if q:
        key = normalize_entity_name(q)
        # Aliases are normalized too; joined by a newline so no match spans two of them.
        queryset = queryset.annotate(
            alias_text=Func(
                F("aliases"), Value("\n"), function="array_to_string", output_field=TextField()
            )
        ).filter(Q(normalized_name__contains=key) | Q(alias_text__contains=key))
    return queryset.order_by("-mention_count", "name", "id")


def entity_get_for_user(*, user, entity_id: int) -> Entity:
    """The caller's entity; NotFound (404) for a missing id or another user's."""
    entity = Entity.objects.filter(user=user, id=entity_id).defer("embedding").first()
    if entity is None:
        raise NotFound("Entity not found.", code="entity_not_found", field="entity_id")
    return entity


def entity_mentions(*, entity: Entity, limit: int = 50) -> list[EntityMention]:
    """An entity's latest mentions with their items (text mentions first)."""
    return list(
        EntityMention.objects.filter(entity=entity)
        .select_related("memory")
        .defer("memory__embedding", "memory__raw_content")
        .order_by("kind", "-memory__occurred_at", "-id")[:limit]
    )


def entity_related(*, entity: Entity, limit: int = 20) -> list[tuple[Entity, CrossReference]]:
    """Entities linked to this one (named together, or related by the model), strongest
    first."""
    links = list(
        CrossReference.objects.filter(
            Q(source_type="entity", source_id=entity.id)
            | Q(target_type="entity", target_id=entity.id),
            user_id=entity.user_id,
            source_type="entity",
            target_type="entity",
        ).order_by("-strength", "-id")[:limit]
    )
    other_ids = [
        link.target_id if link.source_id == entity.id else link.source_id for link in links
    ]
    others = Entity.objects.filter(user_id=entity.user_id, id__in=other_ids).defer("embedding")
    by_id = {other.id: other for other in others}
    return [
        (by_id[other_id], link)
        for other_id, link in zip(other_ids, links, strict=True)
        if other_id in by_id
    ]


def entity_graph(*, user, app_id: str | None = None, limit: int = 30) -> dict:
    """The user's most mentioned entities and the links among them, for the relationship
    picture: {"nodes": [Entity], "edges": [(source id, target id, strength)]}."""
    nodes = list(entities_for_user(user=user, app_id=app_id)[:limit])
    ids = [node.id for node in nodes]
    edges = list(
        CrossReference.objects.filter(
            user=user,
            source_type="entity",
            target_type="entity",
            source_id__in=ids,
            target_id__in=ids,
        )
        .order_by("-strength")
        .values_list("source_id", "target_id", "strength")[: 3 * limit]
    )
    return {"nodes": nodes, "edges": edges}


def entity_total(*, user, app_id: str | None = None) -> int:
    """How many entities the user's memories name (one app's when app_id is given): the
    memory stats' `total_entities`."""
    entities = Entity.objects.filter(user=user)
    if app_id:
        entities = entities.filter(app_id=app_id)
    return entities.count()
