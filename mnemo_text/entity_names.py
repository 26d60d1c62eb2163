"""Word lists the offline entity extractor (``mnemo_text.entities``) types names with.

Small, general lists (well-known companies, products, places, holidays, relation nouns), not a
knowledge base: context patterns decide most types, these settle names that have no context.
The lists are data (`data/entity_names.toml`, each with the reason it exists); this module
gives each its name and type once, read at import.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

_DATA = tomllib.loads((Path(__file__).parent / "data" / "entity_names.toml").read_text("utf-8"))


RELATION_TYPES: dict[str, str] = _DATA["relation_types"]
RELATION_GENDERS: dict[str, str] = _DATA["relation_genders"]
ABBREVIATIONS: tuple[str, ...] = tuple(_DATA["abbreviations"])
NAME_CONNECTORS: frozenset[str] = frozenset(_DATA["name_connectors"])
TITLES: frozenset[str] = frozenset(_DATA["titles"])
PLACE_CUES: frozenset[str] = frozenset(_DATA["place_cues"])
WORK_CUES: frozenset[str] = frozenset(_DATA["work_cues"])
WITH_ORGANIZATION_CUES: frozenset[str] = frozenset(_DATA["with_organization_cues"])
ORGANIZATION_VERBS: frozenset[str] = frozenset(_DATA["organization_verbs"])
PRODUCT_VERBS: frozenset[str] = frozenset(_DATA["product_verbs"])
PROJECT_NOUNS: frozenset[str] = frozenset(_DATA["project_nouns"])
EVENT_NOUNS: frozenset[str] = frozenset(_DATA["event_nouns"])
PLACE_NOUNS: frozenset[str] = frozenset(_DATA["place_nouns"])
SUFFIX_TYPES: dict[str, str] = _DATA["suffix_types"]
PREFIX_TYPES: dict[str, str] = _DATA["prefix_types"]
PLACE_NAME_PREFIXES: frozenset[str] = frozenset(_DATA["place_name_prefixes"])
TO_PERSON_WORDS: frozenset[str] = frozenset(_DATA["to_person_words"])
FROM_PERSON_WORDS: frozenset[str] = frozenset(_DATA["from_person_words"])
INTO_PERSON_WORDS: frozenset[str] = frozenset(_DATA["into_person_words"])
RELATION_TITLES: dict[str, str] = _DATA["relation_titles"]
NAMED_PLACE_NOUNS: frozenset[str] = frozenset(_DATA["named_place_nouns"])
FAVOURITE_WORDS: frozenset[str] = frozenset(_DATA["favourite_words"])
FAVOURITE_TYPES: dict[str, str] = _DATA["favourite_types"]
LEGAL_SUFFIXES: frozenset[str] = frozenset(_DATA["legal_suffixes"])
NAME_WORDS_AFTER_RELATION: frozenset[str] = frozenset(_DATA["name_words_after_relation"])
PET_PLACES: frozenset[str] = frozenset(_DATA["pet_places"])
HOLIDAYS: frozenset[str] = frozenset(_DATA["holidays"])
EVENTS: frozenset[str] = frozenset(_DATA["events"])
ORGANIZATIONS: frozenset[str] = frozenset(_DATA["organizations"])
PRODUCTS: frozenset[str] = frozenset(_DATA["products"])
PRODUCT_BRANDS: frozenset[str] = frozenset(_DATA["product_brands"])
CONCEPTS: frozenset[str] = frozenset(_DATA["concepts"])
NATIONALITIES: frozenset[str] = frozenset(_DATA["nationalities"])
LANGUAGE_VERBS: frozenset[str] = frozenset(_DATA["language_verbs"])
PLACES: frozenset[str] = frozenset(_DATA["places"])
SENTENCE_OPENERS: frozenset[str] = frozenset(_DATA["sentence_openers"])
OPENING_VERBS: frozenset[str] = frozenset(_DATA["opening_verbs"])
NAMES_ENDING_ED: frozenset[str] = frozenset(_DATA["names_ending_ed"])
COMMON_NOUNS: frozenset[str] = frozenset(_DATA["common_nouns"])
COMMON_NOUN_ENDINGS: tuple[str, ...] = tuple(_DATA["common_noun_endings"])
NAMES_WITH_NOUN_ENDINGS: frozenset[str] = frozenset(_DATA["names_with_noun_endings"])
PLURAL_VERBS: frozenset[str] = frozenset(_DATA["plural_verbs"])
COMPOUND_HEADS: frozenset[str] = frozenset(_DATA["compound_heads"])
OPENER_ADVERBS: frozenset[str] = frozenset(_DATA["opener_adverbs"])
OWNED_PLACE_NOUNS: frozenset[str] = frozenset(_DATA["owned_place_nouns"])
NOT_NAMES: frozenset[str] = frozenset(_DATA["not_names"])
