"""The entities a memory item names, as the store needs them before the row is written: their
types choose the item's knowledge bucket and its category terms.

The extraction is cached per (text, speaker) so the entity layer (entities_app), which links
the names after the write, reuses it instead of reading the text again. Rows of the entity
graph are not written here: the store announces its writes (ingestion_app.signals) and
entities_app extracts from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from django.conf import settings

from ingestion_app.models import MemoryItem
from mnemo_text.buckets import bucket_classify
from mnemo_text.entities import ExtractedEntity, extract_entities

_ROLE_SPEAKERS = frozenset({"user", "assistant", "system", "tool", "human", "ai", "bot"})


def bucket_for(text: str, entity_types: Sequence[str] = ()) -> str:
    """The item's bucket among settings.MNEMO_BUCKETS (the last one when the rule's bucket is
    not configured)."""
    return bucket_configured(bucket_classify(text, entity_types=entity_types))


def bucket_configured(bucket: str) -> str:
    """``bucket`` if settings.MNEMO_BUCKETS has it, else the last configured one."""
    buckets = settings.MNEMO_BUCKETS
    return bucket if bucket in buckets else buckets[-1]


@lru_cache(maxsize=4096)
def entities_extracted(text: str, speaker: str) -> tuple[ExtractedEntity, ...]:
    # The bucket is chosen before the row is written (an UPDATE after the insert would write
    # every index entry of the row twice) and the entities after: one extraction serves both.
    return tuple(extract_entities(text, speaker=speaker))


def memory_item_entity_types(item: MemoryItem) -> list[str]:
    """The types of the entities an item not yet written names (its bucket and its categories
    count them; ``entities_extract`` reuses the extraction)."""
    text, _, speaker, owns = item_text(item)
    return [entity.type for entity in entities_extracted(text, speaker if owns else "")]


def text_entity_types(text: str) -> list[str]:
    """The types of the entities a text names (a message's, for its categories)."""
    return [entity.type for entity in entities_extracted(text, "")]


def item_text(item: MemoryItem) -> tuple[str, int, str, bool]:
    """(text to read, its offset in content, speaker name, whether "my" is the speaker's).

    A message item's content starts with its speaker label ("Caroline: ..."), which is the
    speaker, not a mention; an assistant's "my sister" is not the user's sister.
    """
    metadata = item.metadata or {}
    content = item.content or ""
    speaker = str(metadata.get("speaker") or "")
    role = str(metadata.get("role") or "")
    offset = 0
    if metadata.get("granularity") == "message":
        label, separator, _ = content.partition(": ")
        if separator and len(label) <= 64:
            offset = len(label) + 2
    if speaker.lower() in _ROLE_SPEAKERS:
        speaker = ""
    return content[offset:], offset, speaker, role != "assistant"
