"""Entity extraction on the write path: the entities, mentions, cross-references and bucket
of freshly stored memory items.

``entities_extract`` runs the offline extractor (``mnemo_text.entities``) on items that
were just written (already redacted: it reads ``content``), in bulk: a request's one or two
items and an import batch's thousands take the same handful of queries. With an LLM
configured, ``entities_llm_queue`` then asks the model (one structured call per item, in a
background task) for types, descriptions and relations the rules cannot see.

Resolution, never across users or apps: a name resolves to the entity whose normalized name
or alias it is; a lone first name to the one person whose full name starts with it ("Ines" ->
"Ines Garcia") and a full name to the lone first-name person it extends; titles are dropped
for the alias ("Dr. Alvarez" also answers to "alvarez"), and so is a company's legal form
("Acme Corp" is also "acme"; "Acme Corp" said after "Acme" is the same organization), and so
is the word "project" ("Project Atlas" is also "atlas"). New
entities are then embedded in a background task and merged into an entity of the same type
whose name embedding is at least MNEMO_ENTITY_SIMILARITY similar
(``entity_edits.entities_embed_and_resolve``).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django_q.tasks import async_task

from entities_app.models import Entity, EntityMention
from entities_app.services.entity_links import (
    cross_reference_rows,
    cross_references_upsert,
    mentions_insert,
    update_reference_rows,
    update_references_insert,
)
from entities_app.services.entity_mentions import (
    KNOWN_NAMES_MAX_ITEMS,
    NAME_TITLES,
    WEAK_TYPE,
    FoundEntity,
    known_mentions_add,
    known_name_keys,
    mentions_collect,
    name_key_first,
    name_key_is_full,
    name_key_short,
    name_key_untitled,
)
from ingestion_app.models import MemoryItem
from ingestion_app.services.item_entities import bucket_for
from memory_site.providers import get_llm
from memory_site.task_paths import ENTITIES_LLM_TASK, ENTITIES_RESOLVE_TASK
from mnemo_text.entities import ExtractedEntity, normalize_entity_name

logger = logging.getLogger(__name__)

_CANDIDATES = """
SELECT e.id, e.user_id, e.app_id, e.name, e.normalized_name, e.aliases, e.type, e.description,
       e.description_history, e.mention_count, e.first_mentioned_at, e.last_mentioned_at,
       e.created_at, e.updated_at,
       (SELECT m.memory_id FROM entity_mentions m
        WHERE m.entity_id = e.id AND m.memory_id < %(before)s AND m.kind = 'text'
        ORDER BY m.memory_id DESC LIMIT 1) AS previous_memory_id
FROM entities e
WHERE e.user_id = %(user)s AND e.app_id = %(app)s
  AND (e.normalized_name = ANY(%(names)s::text[])
       OR e.aliases && %(aliases)s::varchar[]
       OR (e.type = 'person' AND (split_part(e.normalized_name, ' ', 1) = ANY(%(firsts)s::text[])
           OR (split_part(e.normalized_name, ' ', 1) = ANY(%(titles)s::text[])
               AND split_part(e.normalized_name, ' ', 3) <> ''
               AND split_part(e.normalized_name, ' ', 2) = ANY(%(firsts)s::text[])))))
"""


def _candidates(
    *, user_id: int, app_id: str, keys: set[str], known_keys: set[str], before_id: int
) -> list[Entity]:
    """Entities of the scope named by ``keys`` (names the rules found) or ``known_keys``
    (lower-case names that may be known), each with ``previous_memory_id``."""
    first_words = {key for key in keys if " " not in key}
    full_first = {name_key_first(key) for key in keys if " " in key}
    return list(
        Entity.objects.raw(
            _CANDIDATES,
            {
                "before": before_id,
                "user": user_id,
                "app": app_id,
                "names": sorted(
                    keys | full_first | known_keys | ({name_key_short(key) for key in keys} - {""})
                ),
                "aliases": sorted(keys | known_keys),
                "firsts": sorted(first_words),
                "titles": NAME_TITLES,
            },
        )
    )


def _resolve_scope(
    *,
    user_id: int,
    app_id: str,
    found: dict[str, FoundEntity],
    existing: Sequence[Entity] | None = None,
) -> dict[str, tuple[Entity, bool]]:
    """Each normalized name -> (its entity, created now); creates the missing ones.
    ``existing``: the scope's candidates when the caller read them already."""
    keys = set(found)
    if existing is None:
        existing = _candidates(
            user_id=user_id, app_id=app_id, keys=keys, known_keys=set(), before_id=0
        )
    by_name = {entity.normalized_name: entity for entity in existing}
    by_alias = {alias: entity for entity in existing for alias in entity.aliases}
    people_by_first: dict[str, list[Entity]] = defaultdict(list)
    for entity in existing:
        name = entity.normalized_name
        if entity.type == "person" and name_key_is_full(name):
            people_by_first[name_key_first(name)].append(entity)

    _fold_first_names(found, known={*by_name, *by_alias})
    resolved: dict[str, tuple[Entity, bool]] = {}
    pending: dict[str, Entity] = {}
    now = timezone.now()
    for key, entry in found.items():
        entity = by_name.get(key) or by_alias.get(key)
        if entity is None and entry.type == "person" and " " not in key:
            candidates = people_by_first.get(key, [])
            if len(candidates) == 1:
                entity = candidates[0]
                entry.aliases.add(key)
        if entity is None and entry.type == "person" and " " in key:
            shorter = by_name.get(name_key_first(key))
            if shorter is not None and shorter.type == "person":
                entity = shorter
                entry.aliases.add(key)
        short_name = name_key_short(key, entry.type)
        if entity is None and short_name:
            shorter = by_name.get(short_name)
            if shorter is not None and shorter.type == entry.type:
                entity = shorter
                entry.aliases.add(key)
        if entity is not None:
            resolved[key] = (entity, False)
            continue
        aliases = {
            alias
            for alias in (name_key_untitled(key), entry.relation_alias, short_name, *entry.aliases)
            if alias and alias != key
        }
        if entry.type == "person" and _full_name_of(key, entry.name):
            aliases.add(key)  # "Tom", shown as "Tom Becker"
        pending[key] = Entity(
            user_id=user_id,
            app_id=app_id,
            name=entry.name[:200],
            normalized_name=key,
            aliases=sorted(aliases),
            type=entry.type,
            description=entry.description,
            created_at=now,
        )
    if pending:
        resolved.update(_insert_entities(list(pending.values()), now=now))
    return resolved


def _fold_first_names(found: dict[str, FoundEntity], *, known: set[str]) -> None:
    """ "Tom invited us. Tom Becker is my oldest friend." in one batch is one person, as it is
    across batches: the later of a lone first name and the one new full name it starts goes
    into the earlier (its mentions, description and relation; the other name an alias)."""
    people = [key for key, entry in found.items() if entry.type == "person" and key not in known]
    full_names: dict[str, list[str]] = defaultdict(list)
    for key in people:
        if name_key_is_full(key):
            full_names[name_key_first(key)].append(key)
    for first, fulls in full_names.items():
        if len(fulls) != 1 or first not in people:
            continue
        keys = list(found)
        keep, fold = sorted((first, fulls[0]), key=keys.index)
        kept, folded = found[keep], found.pop(fold)
        kept.mentions.extend(folded.mentions)
        kept.aliases |= {fold, *folded.aliases}
        if keep == first:  # shown under the full name (the first name, its key, an alias)
            kept.name = folded.name
        if folded.strong and not kept.strong:
            kept.strong, kept.description = True, folded.description
            kept.relation_alias = folded.relation_alias
        elif not kept.relation_alias:
            kept.relation_alias = folded.relation_alias


_ENTITY_UPSERT = """
INSERT INTO entities (user_id, app_id, name, normalized_name, aliases, type, description,
                      description_history, mention_count, created_at, updated_at)
SELECT u, a, n, k, ARRAY(SELECT jsonb_array_elements_text(al))::varchar[], t, d, '[]'::jsonb,
       0, %(now)s, %(now)s
FROM unnest(%(users)s::int[], %(apps)s::text[], %(names)s::text[], %(keys)s::text[],
            %(aliases)s::jsonb[], %(types)s::text[], %(descriptions)s::text[])
     AS row(u, a, n, k, al, t, d)
ON CONFLICT (user_id, app_id, normalized_name)
DO UPDATE SET updated_at = entities.updated_at
RETURNING id, normalized_name, xmax = 0
"""


def _insert_entities(entities: list[Entity], *, now: datetime) -> dict[str, tuple[Entity, bool]]:
    """Insert new entities in one statement; a name another writer inserted meanwhile comes
    back as existing (created False) instead of failing."""
    with connection.cursor() as cursor:
        cursor.execute(
            _ENTITY_UPSERT,
            {
                "now": now,
                "users": [entity.user_id for entity in entities],
                "apps": [entity.app_id for entity in entities],
                "names": [entity.name for entity in entities],
                "keys": [entity.normalized_name for entity in entities],
                "aliases": [json.dumps(entity.aliases) for entity in entities],
                "types": [entity.type for entity in entities],
                "descriptions": [entity.description for entity in entities],
            },
        )
        rows = cursor.fetchall()
    by_key = {entity.normalized_name: entity for entity in entities}
    resolved = {}
    for entity_id, key, inserted in rows:
        entity = by_key[key]
        entity.id = entity.pk = entity_id
        if not inserted:
            entity = Entity.objects.get(id=entity_id)
        resolved[key] = (entity, bool(inserted))
    return resolved


def _update_entity(entity: Entity, entry: FoundEntity, created: bool) -> bool:
    """Fold a batch's evidence into an existing entity; True when it changed."""
    if created:
        return False
    if entity.type == "person" and entry.type != "person" and _is_speaker(entity):
        # A speaker of the user's chats stays a person with their own description; what the
        # batch says is a vocative or a misreading ("my business, Jon.").
        entry = replace(entry, type="person", description="", relation_alias="")
    changed = False
    new_aliases = set(entry.aliases)
    if entry.relation_alias:
        new_aliases.add(entry.relation_alias)
    new_aliases -= {entity.normalized_name, *entity.aliases}
    if (
        entity.type == "person"
        and not _full_name_of(entity.normalized_name, entity.name)
        and _full_name_of(entity.normalized_name, entry.name)
    ):
        # "Tom", then "Tom Becker is my oldest friend": shown under the full name from now on.
        entity.name = entry.name[:200]
        new_aliases.add(entity.normalized_name)
        changed = True
    if new_aliases:
        entity.aliases = sorted({*entity.aliases, *new_aliases})[:50]
        changed = True
    if entry.type != entity.type and (
        entity.type == WEAK_TYPE
        or (entry.strong and not entity.description)
        or (entry.organization_cued and entity.type == "person" and not entity.description)
    ):
        entity.type = entry.type
        changed = True
    if entry.description and not _says_no_more(entry.description, entity.description):
        entity_describe(entity=entity, description=entry.description, source="extractor")
        changed = True
    return changed


def _is_speaker(entity: Entity) -> bool:
    return EntityMention.objects.filter(entity_id=entity.id, kind="speaker").exists()


def _full_name_of(first_key: str, name: str) -> bool:
    """Whether `name` is a longer name starting with the lone first name `first_key` ("Tom
    Becker" of "tom"): the name a person found first by first name is shown under."""
    normalized = normalize_entity_name(name)
    return " " not in first_key and (name_key_untitled(normalized) or normalized).startswith(
        f"{first_key} "
    )


def _says_no_more(new: str, current: str) -> bool:
    """Whether a new description adds nothing: the same, or the bare relation of the current
    one (a digest's "their son Leo" gives "son" after "my son Leo" gave "the user's son")."""
    return new == current or current.endswith(f" {new}")


def entity_describe(*, entity: Entity, description: str, source: str) -> None:
    """Set a new description, keeping the previous one in description_history (unsaved)."""
    if entity.description:
        entity.description_history = [
            *entity.description_history,
            {
                "description": entity.description,
                "replaced_at": timezone.now().isoformat(),
                "source": source,
            },
        ][-20:]
    entity.description = description[:1000]


def entities_extract(*, items: Sequence[MemoryItem | None], use_llm: bool = True) -> list[Entity]:
    """Extract, resolve and link the entities of stored items; set each item's bucket.

    With an LLM configured and ``use_llm``, each item is queued for the model's extraction,
    but for a chat turn's message items, whose exchange chunk the model reads instead (one
    call per turn; imports pass False: thousands of calls per export). Idempotent: mentions are unique per (entity, item, kind) and only new ones count, link or
    bump a cross-reference, so running twice over the same items changes nothing. One
    transaction; locks only the rows it updates. Returns the entities created.
    """
    stored = [item for item in items if item is not None and item.pk]
    if not stored:
        return []
    now = timezone.now()
    created_entities: list[Entity] = []
    with transaction.atomic(savepoint=False):
        scopes = mentions_collect(stored)
        # Lower-case mentions of known names: small batches only (an import's names come from
        # the rules alone).
        look_for_known = len(stored) <= KNOWN_NAMES_MAX_ITEMS
        for (user_id, app_id), found in scopes.items():
            scope_items = [
                item for item in stored if (item.user_id, item.app_id) == (user_id, app_id)
            ]
            if look_for_known:  # a chat's or a commit's few items, not an import's thousands
                update_references_insert(
                    update_reference_rows(
                        user_id=user_id, app_id=app_id, items=scope_items, now=now
                    )
                )
            keys_by_item = known_name_keys(found, scope_items) if look_for_known else {}
            known_keys = {key for keys in keys_by_item.values() for key in keys}
            if not found and not known_keys:
                continue
            candidates = _candidates(
                user_id=user_id,
                app_id=app_id,
                keys=set(found),
                known_keys=known_keys,
                before_id=min(item.id for item in scope_items),
            )
            if known_keys:
                known_mentions_add(found, scope_items, keys_by_item, candidates)
            if not found:
                continue
            resolved = _resolve_scope(
                user_id=user_id, app_id=app_id, found=found, existing=candidates
            )
            changed = []
            mention_rows = []
            seen_mentions: set[tuple[int, int, str]] = set()
            for key, entry in found.items():
                entity, created = resolved[key]
                if created:
                    created_entities.append(entity)
                if _update_entity(entity, entry, created):
                    changed.append(entity)
                for item, extracted in entry.mentions:
                    kind = "text" if extracted else "speaker"
                    # One row per (entity, item, kind), the first mention (as the unique key
                    # keeps): a long chunk names the same entity dozens of times.
                    if (entity.id, item.id, kind) in seen_mentions:
                        continue
                    seen_mentions.add((entity.id, item.id, kind))
                    mention_rows.append(
                        (
                            entity.id,
                            item.id,
                            user_id,
                            kind,
                            extracted.sentence if extracted else "",
                            extracted.start if extracted else None,
                            extracted.end if extracted else None,
                            now,
                        )
                    )
            if changed:
                Entity.objects.bulk_update(
                    changed, ["name", "aliases", "type", "description", "description_history"]
                )
            inserted_keys = mentions_insert(
                mention_rows, moments={item.id: item.occurred_at for item in scope_items}
            )
            entities_by_id = {entity.id: entity for entity, _ in resolved.values()}
            items_by_id = {item.id: item for item in scope_items}
            inserted = [
                (entities_by_id[entity_id], items_by_id[memory_id])
                for entity_id, memory_id in sorted(inserted_keys)
                if entities_by_id[entity_id].normalized_name
            ]
            earlier = {
                entity.id: entity.previous_memory_id
                for entity in candidates
                if entity.previous_memory_id
            }
            cross_references_upsert(
                cross_reference_rows(
                    user_id=user_id,
                    inserted=inserted,
                    now=now,
                    earlier=earlier,
                    sentences={
                        (row[0], row[1]): row[4].lstrip("-•* ")
                        for row in mention_rows
                        if row[3] == "text"
                    },
                )
            )
        _set_buckets(stored, scopes)
    if not settings.MNEMO_ENTITY_TASKS:
        return created_entities
    if created_entities:
        entities_resolve_queue([entity.id for entity in created_entities])
    if use_llm and not get_llm().is_local:
        for item in stored:
            if _covered_by_its_exchange(item):
                continue
            transaction.on_commit(
                lambda item_id=item.id: async_task(
                    ENTITIES_LLM_TASK, item_id, task_name=f"entities-llm-{item_id}"
                )
            )
    return created_entities


def _covered_by_its_exchange(item: MemoryItem) -> bool:
    """A chat turn's own item (a message item): its exchange's turn-pair chunk holds the same
    text with the other side of the exchange, and the model reads it there once per turn; the
    message items get the offline extractor's entities."""
    return (
        item.source == MemoryItem.Source.CHUNK
        and (item.metadata or {}).get("granularity") == "message"
    )


def entities_apply_named(
    *,
    item: MemoryItem,
    named: Sequence[tuple[str, str, str, Sequence[str]]],
    relations: Sequence[tuple[str, str, str]] = (),
) -> list[Entity]:
    """Store what a model named in one item: (name, type, description, aliases) per entity and
    (source name, target name, reason) per relation. The model's types and descriptions win
    over the rules' (it read the whole text); mentions are added where the name stands.
    Idempotent like ``entities_extract``. Returns the item's entities."""
    found: dict[str, FoundEntity] = {}
    lowered = item.content.lower()
    for name, kind, description, aliases in named:
        key = normalize_entity_name(name)
        if not key:
            continue
        start = max(lowered.find(name.lower()), 0)
        entry = found.setdefault(key, FoundEntity(name=name, type=kind, strong=True))
        entry.description = description or entry.description
        entry.aliases.update(
            alias_key
            for alias_key in (normalize_entity_name(alias) for alias in aliases)
            if alias_key and alias_key != key
        )
        extracted = ExtractedEntity(name, key, kind, start, start + len(name), "")
        entry.mentions.append((item, extracted))
    if not found:
        return []
    now = timezone.now()
    with transaction.atomic(savepoint=False):
        resolved = _resolve_scope(user_id=item.user_id, app_id=item.app_id, found=found)
        changed = []
        rows = []
        for key, entry in found.items():
            entity, created = resolved[key]
            if entity.type != entry.type:
                entity.type = entry.type
                changed.append(entity)
            if _update_entity(entity, entry, created) or created:
                changed.append(entity)
            mention = entry.mentions[0][1]
            rows.append(
                (entity.id, item.id, item.user_id, "text", "", mention.start, mention.end, now)
            )
        if changed:
            Entity.objects.bulk_update(
                list({entity.id: entity for entity in changed}.values()),
                ["name", "aliases", "type", "description", "description_history"],
            )
        mentions_insert(rows, moments={item.id: item.occurred_at})
        by_key = {key: entity for key, (entity, _) in resolved.items()}
        links = []
        for source, target, reason in relations:
            left = by_key.get(normalize_entity_name(source))
            right = by_key.get(normalize_entity_name(target))
            if left is None or right is None or left.id == right.id:
                continue
            low, high = sorted((left, right), key=lambda entity: entity.id)
            links.append(
                (item.user_id, "entity", low.id, "entity", high.id, "related", reason, 1, now, now)
            )
        cross_references_upsert(links, replace_reason=True)
    return list(by_key.values())


def _set_buckets(items: Sequence[MemoryItem], scopes: dict) -> None:
    types_by_item: dict[int, list[str]] = defaultdict(list)
    for found in scopes.values():
        for entry in found.values():
            for item, extracted in entry.mentions:
                if extracted is not None:
                    types_by_item[item.id].append(entry.type)
    changed = []
    for item in items:
        bucket = bucket_for(item.content, types_by_item.get(item.id, ()))
        if bucket != item.bucket:
            item.bucket = bucket
            changed.append(item)
    if changed:
        MemoryItem.objects.bulk_update(changed, ["bucket"], batch_size=1000)


def entities_resolve_queue(entity_ids: list[int]) -> None:
    """Queue the embedding-similarity pass over new entities once the transaction commits."""
    transaction.on_commit(
        lambda: async_task(
            ENTITIES_RESOLVE_TASK, entity_ids, task_name=f"entities-resolve-{entity_ids[0]}"
        )
    )
