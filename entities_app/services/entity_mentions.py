"""What the offline extractor finds in a batch of memory items (each name's type, mentions,
description, relation, and whose words it was in) and how a name is keyed for resolution
(titles, legal forms, first names). The extraction itself and an item's bucket are the store's
(ingestion_app.services.item_entities): it needs them before the row is written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from entities_app.models import Entity
from entities_app.selectors import query_name_keys
from ingestion_app.models import MemoryItem
from ingestion_app.services.item_entities import entities_extracted, item_text
from mnemo_text.entities import (
    UNALIASED_RELATIONS,
    ExtractedEntity,
    normalize_entity_name,
)
from mnemo_text.entity_names import TITLES
from mnemo_text.exchanges import assistant_spans

# Types a later mention may not overwrite: "other" is a guess any evidence beats.
WEAK_TYPE = "other"
KNOWN_NAMES_MAX_ITEMS = 50


@dataclass
class FoundEntity:
    """What one batch says about one name in one scope."""

    name: str
    type: str
    description: str = ""
    relation_alias: str = ""
    strong: bool = False
    # An organization said with a cue ("I work at Globex"), which outweighs a name typed a
    # person only by default ("Globex is hiring").
    organization_cued: bool = False
    # Someone who speaks in the user's chats (a message's author): always a person.
    speaker: bool = False
    aliases: set[str] = field(default_factory=set)
    mentions: list[tuple[MemoryItem, ExtractedEntity | None]] = field(default_factory=list)


def _assistant_ranges(item: MemoryItem, text: str) -> list[tuple[int, int]]:
    """Where a turn-pair chunk or a session digest gives the assistant's words
    (`mnemo_text.exchanges.assistant_spans`); a message or a passage is one side's own words."""
    if (item.metadata or {}).get("granularity") in ("message", "passage"):
        return []
    return assistant_spans(text)


def mentions_collect(items: Sequence[MemoryItem]) -> dict[tuple[int, str], dict[str, FoundEntity]]:
    """Extracted names by (user, app) scope, then by normalized name."""
    scopes: dict[tuple[int, str], dict[str, FoundEntity]] = defaultdict(dict)
    for item in items:
        text, offset, speaker, owns = item_text(item)
        assistant_ranges = _assistant_ranges(item, text) if owns else []
        found = scopes[(item.user_id, item.app_id)]
        if speaker:
            key = normalize_entity_name(speaker)
            if key:
                entry = found.setdefault(key, FoundEntity(name=speaker, type="person", strong=True))
                entry.speaker = True
                entry.mentions.append((item, None))
        for extracted in entities_extracted(text, speaker if owns else ""):
            if extracted.alias_of in found and extracted.normalized not in found:
                # "Kat, short for Katherine": a mention of Kat, who is also called Katherine.
                main = found[extracted.alias_of]
                main.aliases.add(extracted.normalized)
                main.mentions.append((item, _shifted(extracted, offset)))
                continue
            entry = found.get(extracted.normalized)
            if entry is None:
                entry = found[extracted.normalized] = FoundEntity(
                    name=extracted.name, type=extracted.type
                )
            if _organization_cued(extracted) and (
                entry.type == "organization" or (entry.type == "person" and not entry.strong)
            ):
                entry.type, entry.organization_cued = "organization", True
            owned = owns and not any(a <= extracted.start < b for a, b in assistant_ranges)
            if extracted.relation and owned and not _speaker_retyped(entry, extracted):
                entry.strong = True
                entry.type = extracted.type
                entry.description = extracted.description
                if (
                    extracted.owner in {"my", "our"}
                    and extracted.relation not in UNALIASED_RELATIONS
                ):
                    # "his dog Rex" is not what the speaker's "my dog" means.
                    owner = normalize_entity_name(speaker) if speaker else "my"
                    entry.relation_alias = f"{owner} {extracted.relation}"
            entry.mentions.append((item, _shifted(extracted, offset)))
    return scopes


def _speaker_retyped(entry: FoundEntity, extracted: ExtractedEntity) -> bool:
    """Whether a relation would make a chat's speaker something other than a person: "tough
    times with my business, Jon." addresses Jon, it does not name the business."""
    return entry.speaker and extracted.type != "person"


def _organization_cued(extracted: ExtractedEntity) -> bool:
    return extracted.cued and extracted.type == "organization" and not extracted.relation


def _sentence_at(text: str, start: int) -> str:
    left = max(text.rfind(mark, 0, start) for mark in (". ", "! ", "? ", "\n"))
    ends = [index for index in (text.find(mark, start) for mark in ".!?\n") if index >= 0]
    right = min(ends) + 1 if ends else len(text)
    return " ".join(text[left + 1 if left >= 0 else 0 : right].split())[:500]


def known_name_keys(
    found: dict[str, FoundEntity], items: Sequence[MemoryItem]
) -> dict[int, list[str]]:
    """Per item, the lower-case names it holds that the rules did not find and that may name a
    known entity: "ines" in lower case, "my sister". Names of 4+ characters only ("max" is a
    word too)."""
    return {
        item.id: [
            key
            for key in query_name_keys(item_text(item)[0])
            if key not in found and (len(key) >= 4 or " " in key)
        ]
        for item in items
    }


def known_mentions_add(
    found: dict[str, FoundEntity],
    items: Sequence[MemoryItem],
    keys_by_item: dict[int, list[str]],
    known: Sequence[Entity],
) -> None:
    """Mentions the rules miss but the scope's entities (``known``, read once with the
    candidates of resolution) explain: a key that names exactly one entity."""
    by_key: dict[str, list[Entity]] = defaultdict(list)
    for entity in known:
        if not _known_in_lower_case(entity):
            continue
        for key in {entity.normalized_name, *entity.aliases}:
            by_key[key].append(entity)
    # "My sister Maria lives in Rome": the rules found who "my sister" is in this batch, so
    # the key does not name the sister already known.
    claimed = {entry.relation_alias for entry in found.values() if entry.relation_alias}
    for item in items:
        text, offset, _, _ = item_text(item)
        lowered = text.lower()
        for key in keys_by_item.get(item.id, ()):
            matches = by_key.get(key, [])
            if len(matches) != 1 or matches[0].normalized_name in found or key in claimed:
                continue
            entity = matches[0]
            start = lowered.find(key)
            if start < 0:
                continue
            entry = found.setdefault(
                entity.normalized_name, FoundEntity(name=entity.name, type=entity.type)
            )
            entry.mentions.append(
                (
                    item,
                    ExtractedEntity(
                        name=entity.name,
                        normalized=entity.normalized_name,
                        type=entity.type,
                        start=start + offset,
                        end=start + offset + len(key),
                        sentence=_sentence_at(text, start),
                    ),
                )
            )


def _known_in_lower_case(entity: Entity) -> bool:
    """Whether a lower-case word may stand for the entity: one the user described ("my sister
    Ines": "ines called"), a full name, or a place, pet or company. A lone name typed a person
    only by default may be a capitalized common word ("Appreciate the little things"), and
    linking every lower-case "appreciate" to it would make it the user's most mentioned
    person."""
    return bool(entity.description or entity.aliases or entity.type != "person")


def _shifted(extracted: ExtractedEntity, offset: int) -> ExtractedEntity:
    if not offset:
        return extracted
    return replace(extracted, start=extracted.start + offset, end=extracted.end + offset)


def name_key_untitled(key: str) -> str:
    words = key.split()
    if len(words) > 1 and (words[0] in TITLES or f"{words[0]}." in TITLES):
        return " ".join(words[1:])
    return ""


def name_key_is_full(key: str) -> bool:
    """A given name and more, past a title: "amy chen", "dr amy chen"; not "dr patel"."""
    return " " in (name_key_untitled(key) or key)


def name_key_first(key: str) -> str:
    """The given name a full name starts with, past a title: "dr amy chen" -> "amy"."""
    return (name_key_untitled(key) or key).split()[0]


# Titles as normalized names start with them ("dr amy chen"), for the SQL below.
NAME_TITLES = sorted({title.rstrip(".") for title in TITLES})


# Legal forms a company is also called without: "Acme Corp" is the user's "Acme".
_LEGAL_FORMS = frozenset({"inc", "corp", "corporation", "llc", "ltd", "plc", "gmbh", "co"})
# The word a project is also called without: "Project Atlas" is the team's "Atlas".
_PROJECT_WORDS = frozenset({"project"})


def name_key_short(key: str, entity_type: str | None = None) -> str:
    """What an organization is also called without its legal form ("acme corp" -> "acme"), a
    project without the word "project" ("project atlas", "atlas project" -> "atlas") and a
    product without its model number ("iphone 15" -> "iphone"); "" when the name has none of
    them (or the type given is another)."""
    words = key.split()
    if len(words) < 2:
        return ""
    if entity_type in (None, "product") and words[-1].isdigit():
        return " ".join(words[:-1])
    if entity_type in (None, "organization") and words[-1].rstrip(".") in _LEGAL_FORMS:
        return " ".join(words[:-1])
    if entity_type in (None, "project"):
        if words[0] in _PROJECT_WORDS:
            return " ".join(words[1:])
        if words[-1] in _PROJECT_WORDS:
            return " ".join(words[:-1])
    return ""


# The scope's entities a batch's names may resolve to (name, alias, or the full name of a lone
# first name), with the newest item below the batch that mentions each: one round trip, raw
# SQL (no ORM compilation on the message path), without the name embedding.
