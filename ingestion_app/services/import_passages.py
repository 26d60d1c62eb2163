"""The passage rows of an imported chunk: each long message of the exchange cut into passages
(`chunk_passage_texts`), dated and attributed, beside the chunk they come from.

The importer writes them as it stores a chunk; `manage.py memory_reindex` rebuilds them for
chunks stored under an older PASSAGE_RULE. Both sit above this module, so the rule lives in
the store's app, beneath them.
"""

from __future__ import annotations

from ingestion_app.chunking.passages import PassageText, chunk_passage_texts
from ingestion_app.models import MemoryItem
from ingestion_app.parsers import TurnPair
from ingestion_app.services.memory_store import PLATFORM_NAMES, MemoryScope, memory_item_build
from ingestion_app.services.message_index import message_date_label

# Import passages are their own kind of chunk (not "message": there is no Message row, no
# session position and no neighbour context).
PASSAGE_GRANULARITY = "passage"


# The version of `chunk_passage_items` an imported chunk's passages follow (metadata
# "passage_rule"; `manage.py memory_reindex` brings older chunks up to it). 2: the prompt of
# a long exchange is a passage of its own.
PASSAGE_RULE = 2


def chunk_passage_items(
    *,
    chunk_item: MemoryItem,
    pairs: list[TurnPair],
    assistant_override: str | None = None,
    title: str = "",
    platform: str = "",
    conversation_id: str = "",
    job_id: str = "",
    import_file_id: int | None = None,
    passages: list[PassageText] | None = None,
) -> list[MemoryItem]:
    """The rows of the chunk's passages (`chunk_passage_texts`, the rule and why), beside the
    chunk. ``passages``: the importer's workers planned them already (else planned here)."""
    if passages is None:
        passages = chunk_passage_texts(pairs, assistant_override)
    items: list[MemoryItem] = []
    where = title or "untitled conversation"
    platform_name = PLATFORM_NAMES.get(platform, platform)
    message = None  # (pair position, role) of the passages below: one message's are in a row
    for passage in passages:
        if message != (passage.pair_position, passage.role):
            message = (passage.pair_position, passage.role)
            pair = pairs[passage.pair_position]
            side = 0 if passage.role == "user" else 1
            said_at = pair.user_at if side == 0 else pair.assistant_at
            moment = said_at or chunk_item.occurred_at
            date_label = message_date_label(moment)
            label = passage.role.capitalize()
            header = f"{date_label}: {label} in {platform_name} conversation '{where}'"
            message_id = (
                pair.message_ids[side] if len(pair.message_ids) > side else ""
            ) or f"{conversation_id}#{pair.index}:{passage.role}"
        items.append(
            memory_item_build(
                scope=MemoryScope(
                    user_id=chunk_item.user_id,
                    app_id=chunk_item.app_id,
                    project_id=chunk_item.project_id,
                    agent_id=chunk_item.agent_id,
                ),
                source=MemoryItem.Source.CHUNK,
                content=passage.content,
                header=header,
                # The date and the passage only: the prompt a reply answers is embedded with
                # the exchange's chunk already (300 more characters per passage cost
                # a third of an import's embedding time).
                embedding_text=f"({date_label}) {passage.content}",
                topics=chunk_item.topics,
                metadata={
                    "granularity": PASSAGE_GRANULARITY,
                    "role": passage.role,
                    "speaker": passage.role,
                    "message_id": message_id,
                    "passage": {
                        "index": passage.index,
                        "count": passage.count,
                        "start": passage.start,
                        "end": passage.end,
                    },
                    "parent_chunk_id": chunk_item.chunk_id,
                    "exchange_key": chunk_item.metadata["exchange_key"],
                    "provenance": chunk_item.metadata["provenance"],
                    "conversation_title": title or "",
                    "source_platform": platform,
                    "conversation_key": chunk_item.metadata.get("conversation_key", ""),
                    "import_job_id": job_id,
                    **({"import_file_id": import_file_id} if import_file_id is not None else {}),
                },
                chunk_id=f"{chunk_item.chunk_id}-{passage.role[0]}{pair.index}p{passage.index}",
                token_count=0,  # counted when read, as the chunk's
                occurred_at=moment,
                bucket_from_entities=False,
                cues=passage.cues,
            )
        )
    return items
