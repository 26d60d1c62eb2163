"""Entity mentions and cross-references in bulk: one statement per batch for the mention rows
and one for the links (entity-entity "related" for names mentioned together, item-item
"mentions_same_entity" to the previous item naming an entity, "follows_up" instead when the item
says it follows up an earlier chat), whatever the batch size; and
item-item "updates" links from a memory to the earlier ones whose stated value it replaces.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime

from django.db import connection

from entities_app.models import CrossReference, Entity
from ingestion_app.models import MemoryItem
from ingestion_app.selectors import memories_matching_before
from mnemo_text.fact_updates import RELATION_TERMS, statement_updates, user_statements

# New mentions and, for the (entity, item) pairs that are new, the entities' counts and first
# and last mention: one statement, so a stored message pays one round trip for both.
MENTION_INSERT = """
WITH inserted AS (
    INSERT INTO entity_mentions (entity_id, memory_id, user_id, kind, sentence, start, "end",
                                 created_at)
    SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::int[], %s::text[], %s::text[],
                         %s::int[], %s::int[], %s::timestamptz[])
    ON CONFLICT (entity_id, memory_id, kind) DO NOTHING
    RETURNING entity_id, memory_id
), moments AS (
    SELECT * FROM unnest(%s::bigint[], %s::timestamptz[]) AS t(memory_id, moment)
), counted AS (
    SELECT i.entity_id, count(DISTINCT i.memory_id) AS added, min(t.moment) AS first,
           max(t.moment) AS last
    FROM inserted i JOIN moments t ON t.memory_id = i.memory_id
    GROUP BY i.entity_id
), updated AS (
    UPDATE entities AS e
    SET mention_count = e.mention_count + c.added,
        first_mentioned_at = LEAST(COALESCE(e.first_mentioned_at, c.first), c.first),
        last_mentioned_at = GREATEST(COALESCE(e.last_mentioned_at, c.last), c.last)
    FROM counted c
    WHERE e.id = c.entity_id
)
SELECT DISTINCT entity_id, memory_id FROM inserted
"""

CROSS_REFERENCE_UPSERT = """
INSERT INTO cross_references (user_id, source_type, source_id, target_type, target_id,
                              relationship, reason, strength, created_at, updated_at)
SELECT * FROM unnest(%s::int[], %s::text[], %s::bigint[], %s::text[], %s::bigint[], %s::text[],
                     %s::text[], %s::int[], %s::timestamptz[], %s::timestamptz[])
ON CONFLICT (user_id, source_type, source_id, target_type, target_id, relationship)
DO UPDATE SET strength = LEAST(cross_references.strength + EXCLUDED.strength, 1000),
              updated_at = EXCLUDED.updated_at
"""


def columns(rows: list[tuple]) -> list[list]:
    return [list(column) for column in zip(*rows, strict=True)] if rows else []


def mentions_insert(rows: list[tuple], *, moments: dict[int, datetime]) -> set[tuple[int, int]]:
    """Insert mention rows (entity, item, user, kind, sentence, start, end, created_at) that do
    not exist yet and count each new (entity, item) pair once on its entity; ``moments`` gives
    each item's occurred_at. Returns the new (entity id, item id) pairs."""
    if not rows:
        return set()
    memory_ids = sorted({row[1] for row in rows})
    with connection.cursor() as cursor:
        cursor.execute(
            MENTION_INSERT,
            [*columns(rows), memory_ids, [moments[memory_id] for memory_id in memory_ids]],
        )
        return {(entity_id, memory_id) for entity_id, memory_id in cursor.fetchall()}


def cross_references_upsert(rows: list[tuple], *, replace_reason: bool = False) -> None:
    """Insert links or bump their strength; ``replace_reason`` (a model's relation) also
    replaces the rule's generic reason."""
    if rows:
        sql = CROSS_REFERENCE_UPSERT
        if replace_reason:
            sql = sql.replace(
                "updated_at = EXCLUDED.updated_at",
                "updated_at = EXCLUDED.updated_at, reason = EXCLUDED.reason",
            )
        with connection.cursor() as cursor:
            cursor.execute(sql, columns(rows))


def cross_reference_rows(
    *,
    user_id: int,
    inserted: list[tuple[Entity, MemoryItem]],
    now: datetime,
    earlier: dict[int, int] | None = None,
    sentences: dict[tuple[int, int], str] | None = None,
) -> list[tuple]:
    """Entity-entity "related" links for names mentioned together, and for each new mention an
    item-item "mentions_same_entity" link to the previous item naming that entity (``earlier``:
    entity id -> that item when the caller read it already, else it is queried).

    Together means in one item, but in one sentence of a session summary (``sentences``: the
    sentence of each (entity, item) mention): a digest retells a whole session, and the cat of
    one line is not related to the city of another."""
    rows: dict[tuple, tuple] = {}
    by_item: dict[tuple[int, str], list[Entity]] = defaultdict(list)
    by_entity: dict[int, list[MemoryItem]] = defaultdict(list)
    for entity, item in inserted:
        sentence = ""
        if sentences is not None and item.source == MemoryItem.Source.SUMMARY:
            sentence = sentences.get((entity.id, item.id), "")
        by_item[(item.id, sentence)].append(entity)
        by_entity[entity.id].append(item)
    for entities in by_item.values():
        unique = sorted({entity.id: entity for entity in entities}.values(), key=lambda e: e.id)
        for index, left in enumerate(unique[:12]):
            for right in unique[index + 1 : 12]:
                key = ("entity", left.id, "entity", right.id, "related")
                previous = rows.get(key)
                strength = previous[7] + 1 if previous else 1
                reason = f"{left.name} and {right.name} are mentioned together"
                rows[key] = (user_id, *key, reason, strength, now, now)
    if not inserted:
        return list(rows.values())
    if earlier is None:
        earlier = mentions_previous(list(by_entity), before_id=min(item.id for _, item in inserted))
    names = {entity.id: entity.name for entity, _ in inserted}
    following_up = {
        item.id: item.chat_session_id
        for _, item in inserted
        if item.chat_session_id and FOLLOW_UP_CUES.search(item.content or "")
    }
    sessions = _sessions_of(
        [earlier[entity_id] for entity_id in by_entity if entity_id in earlier]
        if following_up
        else []
    )
    for entity_id, items in by_entity.items():
        ordered = sorted(items, key=lambda item: (item.occurred_at, item.id))
        sessions.update((item.id, item.chat_session_id) for item in ordered)
        chain = [earlier.get(entity_id)] + [item.id for item in ordered]
        for previous_id, item_id in zip(chain, chain[1:], strict=False):
            if not previous_id or previous_id == item_id:
                continue
            name = names[entity_id]
            if item_id in following_up and sessions.get(previous_id) not in (
                None,
                following_up[item_id],
            ):
                key = ("item", item_id, "item", previous_id, "follows_up")
                rows.setdefault(key, (user_id, *key, f"follows up on {name}", 1, now, now))
                continue
            key = ("item", item_id, "item", previous_id, "mentions_same_entity")
            rows.setdefault(key, (user_id, *key, f"both mention {name}", 1, now, now))
    return list(rows.values())


# What opens a follow-up of an earlier chat: a memory saying one of these about an entity an
# earlier chat named links to it as "follows_up" rather than "mentions_same_entity".
FOLLOW_UP_CUES = re.compile(
    r"\b(?:quick |small |an |some )?updates? (?:on|about)\b|\bquick update\b|"
    r"\bfollow(?:ing)?[- ]up\b|\bas i (?:mentioned|said|told you)\b|"
    r"\blike i (?:said|mentioned)\b|\bsince we (?:last )?(?:talked|spoke|chatted)\b|"
    r"\bnews (?:on|about)\b|\b(?:remember|recall) when\b",
    re.IGNORECASE,
)


def _sessions_of(item_ids: list[int]) -> dict[int, object]:
    """Item -> its chat session (None for an item of no chat)."""
    if not item_ids:
        return {}
    return dict(MemoryItem.objects.filter(id__in=item_ids).values_list("id", "chat_session_id"))


def mentions_previous(entity_ids: list[int], *, before_id: int) -> dict[int, int]:
    """Entity -> the newest item below ``before_id`` naming it (one index probe each)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT e.id, (SELECT m.memory_id FROM entity_mentions m
                          WHERE m.entity_id = e.id AND m.memory_id < %s AND m.kind = 'text'
                          ORDER BY m.memory_id DESC LIMIT 1)
            FROM unnest(%s::bigint[]) AS e(id)
            """,
            [before_id, entity_ids],
        )
        return {entity_id: memory_id for entity_id, memory_id in cursor.fetchall() if memory_id}


# "updates" links: the earlier items looked at for each new statement of a single-valued
# relation (the newest ones using the relation's words), and how each relation is named in
# the link's reason.
UPDATE_CANDIDATES = 20
_RELATION_NAMES = {
    "residence": "home",
    "employer": "employer",
    "job": "job",
    "age": "age",
    "marital": "marital status",
    "diet": "diet",
}
_LINK_INSERT = CROSS_REFERENCE_UPSERT.split("ON CONFLICT")[0] + (
    "ON CONFLICT (user_id, source_type, source_id, target_type, target_id, relationship) DO NOTHING"
)


def update_reference_rows(
    *, user_id: int, app_id: str, items: list[MemoryItem], now: datetime
) -> list[tuple]:
    """Item-item "updates" links: a new memory in which the user gives a new value of what an
    earlier one states ("I just moved to Denver" after "I live in Austin";
    mnemo_text.fact_updates, the rule search uses to put the newer first) points to
    that earlier memory. Single-valued relations only (home, employer, job, age, marital
    status, diet): their statements share words (RELATION_TERMS), so the earlier memories are
    the newest UPDATE_CANDIDATES matching them. One link per exchange on each side: a turn
    pair and its message items say the same."""
    rows: dict[tuple, tuple] = {}
    linked_messages: set[int] = set()
    ordered = sorted(items, key=lambda item: (item.source != MemoryItem.Source.FACT, item.id))
    for item in ordered:
        if item.source == MemoryItem.Source.SUMMARY or not item.content:
            continue
        newer = user_statements(item.content, is_fact=item.source == MemoryItem.Source.FACT)
        relations = sorted({fact.relation for fact in newer if fact.relation in RELATION_TERMS})
        if not relations:
            continue  # the common case: no query at all
        messages = set(item.source_message_ids or ())
        if messages and (messages & linked_messages or _updates_said(user_id, messages)):
            continue
        terms = sorted({word for name in relations for word in RELATION_TERMS[name].split()})
        earlier = memories_matching_before(
            user_id=user_id, app_id=app_id, item=item, terms=terms, limit=UPDATE_CANDIDATES
        )
        older_messages: set[int] = set()
        # A message item before the turn pair repeating it: the link names the short one.
        found = sorted(earlier, key=lambda row: not row[4])
        for older_id, content, source, source_messages, _ in found:
            covered = set(source_messages or ())
            if covered & older_messages:
                continue
            older = user_statements(content or "", is_fact=source == MemoryItem.Source.FACT)
            replaced = [
                name
                for name in relations
                if statement_updates(
                    [fact for fact in older if fact.relation == name],
                    [fact for fact in newer if fact.relation == name],
                )
            ]
            if not replaced:
                continue
            older_messages |= covered
            linked_messages |= messages
            key = ("item", item.id, "item", older_id, "updates")
            reason = "a new " + " and ".join(_RELATION_NAMES[name] for name in replaced)
            rows[key] = (user_id, *key, reason, 1, now, now)
    return list(rows.values())


def _updates_said(user_id: int, messages: set[int]) -> bool:
    """Whether an item of these messages already links its update (the message item, written
    with the user's message, before the turn pair that repeats it)."""
    return CrossReference.objects.filter(
        user_id=user_id,
        relationship=CrossReference.Relationship.UPDATES,
        source_type=CrossReference.NodeType.ITEM,
        source_id__in=MemoryItem.objects.filter(
            user_id=user_id, source_message_ids__overlap=sorted(messages)
        ).values("id"),
    ).exists()


def update_references_insert(rows: list[tuple]) -> None:
    """Insert "updates" links that do not exist yet (running twice changes nothing)."""
    if rows:
        with connection.cursor() as cursor:
            cursor.execute(_LINK_INSERT, columns(rows))
