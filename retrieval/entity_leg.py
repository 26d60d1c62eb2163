"""The entity leg of a search: the items in scope that mention the entities a query names,
read in the same round trip as the keyword and vector legs (`retrieval.candidates`).

It reads the entity graph's tables (entities_app) joined with the store's scope in one
statement; the entity graph's other reads stay with entities_app.selectors.
"""

from __future__ import annotations

import math

from entities_app.models import Entity, EntityMention
from entities_app.selectors import QueryEntity, query_name_keys
from mnemo_text.entities import normalize_entity_name
from retrieval.candidates import Statement
from retrieval.config import ranking_config


def entity_leg_statement(
    *,
    user_id: int,
    app_id: str,
    query: str,
    exclude_names=(),
    scope: str,
    params: dict,
    scope_items: int | None,
    limit: int,
) -> Statement | None:
    """The third retrieval leg as one statement: the caller's entities whose name or
    alias the query holds (at most `entity_query_entities`, most mentioned first) and the
    items in scope that mention them, best first, in one statement that the search sends with
    its other legs; its `read` turns the rows into (entities, [(item id, weight)]). None when
    the query names nothing an entity could be called.

    An item scores the summed rarity (idf over the scope) of the query entities it names, so
    "Ines" and "Lisbon" together beat either alone and a name found everywhere counts little;
    ties go to the newer item (each entity's `entity_mentions_per_entity` newest mentions, an
    index range each). Entities named in more than `entity_max_mention_share` of the scope
    pull in no items (they would pull in everything) but are still returned.
    """
    keys = query_name_keys(query)
    if not keys:
        return None
    total = max(scope_items or 0, 1)
    config = ranking_config()
    cap = math.inf if scope_items is None else max(5, config.entity_max_mention_share * total)
    sql = f"""
        WITH named AS MATERIALIZED (
            SELECT id, name, type, description, mention_count, normalized_name, aliases,
                   row_number() OVER (ORDER BY mention_count DESC, id) AS position
            FROM {Entity._meta.db_table}
            WHERE user_id = %(e_user)s AND app_id = %(e_app)s AND mention_count > 0
              AND (normalized_name = ANY(%(e_keys)s::text[]) OR aliases && %(e_keys)s::varchar[])
              AND NOT normalized_name = ANY(%(e_excluded)s::text[])
            ORDER BY mention_count DESC, id
            LIMIT %(e_entities)s
        ), scored AS (
            SELECT mentioned.memory_id AS id, sum(w.weight) AS weight
            FROM (
                SELECT id, ln(1 + %(e_total)s::float8 / (1 + mention_count)) AS weight
                FROM named WHERE mention_count <= %(e_cap)s::float8
            ) AS w
            CROSS JOIN LATERAL (
                SELECT memory_id FROM {EntityMention._meta.db_table}
                WHERE entity_id = w.id AND kind = 'text'
                ORDER BY memory_id DESC LIMIT %(e_per_entity)s
            ) AS mentioned
            GROUP BY mentioned.memory_id
        ), items AS (
            SELECT rag_store.id, scored.weight,
                   row_number() OVER (
                       ORDER BY scored.weight DESC, occurred_at DESC, rag_store.id DESC
                   ) AS position
            FROM rag_store JOIN scored ON scored.id = rag_store.id
            WHERE {scope}
            ORDER BY 2 DESC, occurred_at DESC, rag_store.id DESC
            LIMIT %(e_limit)s
        )
        SELECT 0, position, id, name, type, description, mention_count, normalized_name,
               aliases, NULL::float8
        FROM named
        UNION ALL
        SELECT 1, position, id, NULL, NULL, NULL, NULL, NULL, NULL, weight FROM items
        ORDER BY 1, 2
        """
    params = {
        **params,
        "e_user": user_id,
        "e_app": app_id,
        "e_keys": keys,
        "e_excluded": sorted({normalize_entity_name(name) for name in exclude_names}),
        "e_entities": config.entity_query_entities,
        "e_total": total,
        "e_cap": cap,
        "e_per_entity": config.entity_mentions_per_entity,
        "e_limit": limit,
    }
    return Statement(sql, params, _entity_leg_read)


def _entity_leg_read(rows: list[tuple]) -> tuple[list[QueryEntity], list[tuple[int, float]]]:
    entities: list[QueryEntity] = []
    items: list[tuple[int, float]] = []
    for part, _, item_id, *entity, weight in rows:
        if part == 0:
            entities.append(QueryEntity(item_id, *entity))
        else:
            items.append((item_id, float(weight)))
    return entities, items
