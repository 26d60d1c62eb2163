"""The chunk writer: ledger lookup, chunking, headers, embeddings and insert per round."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any

from django.utils import timezone

from imports_app.models import ImportedConversation, ImportFile, ImportJob
from ingestion_app.chunking.conversations import Chunk, pair_key
from ingestion_app.chunking.markdown import build_frontmatter, conversation_key
from ingestion_app.chunking.workers import prepare_conversations
from ingestion_app.models import MemoryItem
from ingestion_app.parsers import (
    Conversation,
    SkippedConversation,
    TurnPair,
)
from ingestion_app.services.headers import chunks_describe
from ingestion_app.services.import_passages import PASSAGE_RULE, chunk_passage_items
from ingestion_app.services.memory_store import (
    MemoryScope,
    exchange_key,
    memory_item_build,
    memory_items_copy,
    memory_items_embed,
    memory_provenance,
)
from memory_site.providers import get_embedder, get_llm


@dataclass
class ImportOutcome:
    conversations: int = 0
    turn_pairs: int = 0
    duplicates_skipped: int = 0
    chunk_ids: list[str] = field(default_factory=list)
    # Passages stored without a vector, for the backfill after the file (passage_vectors).
    passages_deferred: int = 0
    skipped: list[SkippedConversation] = field(default_factory=list)


class ChunkWriter:
    """Writes rounds of conversations: ledger lookup, chunking, headers, embeddings, insert.

    The CPU-heavy part of a round (redaction, chunk planning, local headers and tags) runs in
    worker processes when a pool is given, while this process parses the next round and
    PostgreSQL stores the previous one; at most ``max_in_flight`` rounds are pending, which
    bounds memory. Everything touching the database stays in this process and transaction.
    """

    def __init__(
        self,
        *,
        job: ImportJob,
        import_file: ImportFile,
        embed: bool = True,
        pool: Executor | None = None,
    ) -> None:
        self.job = job
        self.import_file = import_file
        self.namespace = str(job.user_id)
        self.outcome = ImportOutcome()
        self.embedder = get_embedder() if embed else None
        self.llm = get_llm()
        self.pool = pool
        self.max_in_flight = (getattr(pool, "_max_workers", 1) + 1) if pool else 0
        self.ledger: dict[str, ImportedConversation] = {}
        self.in_flight: deque[tuple[list[Conversation], list[ImportedConversation], Any]] = deque()

    def write(self, conversations: list[Conversation]) -> None:
        work, rows = self._select(conversations)
        if not work:
            return
        args = ([(c, covered) for c, covered in work],)
        # Offline the workers write the local headers too; a model's are asked for in _store.
        options = {"namespace": self.namespace, "describe": self.llm.is_local}
        if self.pool is None:
            self._store([c for c, _ in work], rows, prepare_conversations(*args, **options))
            return
        self.in_flight.append(
            ([c for c, _ in work], rows, self.pool.submit(prepare_conversations, *args, **options))
        )
        while len(self.in_flight) >= self.max_in_flight:
            self._store_oldest()

    def finish(self) -> None:
        while self.in_flight:
            self._store_oldest()

    def abandon(self) -> None:
        """Forget the rounds still in the pool (the file failed): queued ones are cancelled,
        running ones finish in the background and their results are dropped."""
        while self.in_flight:
            _raw, _rows, future = self.in_flight.popleft()
            future.cancel()

    def _store_oldest(self) -> None:
        raw, rows, future = self.in_flight.popleft()
        self._store(raw, rows, future.result())

    def _select(
        self, conversations: list[Conversation]
    ) -> tuple[list[tuple[Conversation, frozenset[str]]], list[ImportedConversation]]:
        """Conversations with pairs not stored yet, each with the keys already covered; the
        in-memory ledger is updated here so a conversation repeated later in the file is not
        imported twice even before this round is stored."""
        keyed = [
            (
                conversation_key(
                    namespace=self.namespace,
                    platform=c.platform,
                    conversation_id=c.conversation_id,
                ),
                c,
            )
            for c in conversations
        ]
        unknown = {key for key, _ in keyed if key not in self.ledger}
        if unknown:
            for row in ImportedConversation.objects.filter(
                user_id=self.job.user_id, conversation_key__in=unknown
            ):
                self.ledger[row.conversation_key] = row
        work: list[tuple[Conversation, frozenset[str]]] = []
        rows: dict[str, ImportedConversation] = {}
        for key, conversation in keyed:
            self.outcome.conversations += 1
            self.outcome.turn_pairs += len(conversation.pairs)
            row = self.ledger.get(key)
            covered = frozenset(row.pair_keys) if row else frozenset()
            keys = [pair_key(p) for p in conversation.pairs]
            fresh = [k for k in keys if k not in covered]
            self.outcome.duplicates_skipped += len(keys) - len(fresh)
            if not fresh:
                continue
            work.append((conversation, covered))
            if row is None:
                row = ImportedConversation(
                    user_id=self.job.user_id,
                    conversation_key=key,
                    platform=conversation.platform,
                    conversation_id=conversation.conversation_id[:255],
                )
                self.ledger[key] = row
            row.pair_keys = list(dict.fromkeys([*row.pair_keys, *fresh]))
            row.last_file = self.import_file
            row.updated_at = timezone.now()
            rows[key] = row
        return work, list(rows.values())

    def _store(
        self,
        raw: list[Conversation],
        rows: list[ImportedConversation],
        prepared: list[tuple[Conversation, list[Chunk]]],
    ) -> None:
        planned = [
            (chunk, redacted, original)
            for original, (redacted, chunks) in zip(raw, prepared, strict=True)
            for chunk in chunks
        ]
        titles = {
            conversation_key(
                namespace=self.namespace,
                platform=redacted.platform,
                conversation_id=redacted.conversation_id,
            ): redacted.title
            for redacted, _ in prepared
        }
        for row in rows:
            row.title = (titles.get(row.conversation_key) or "")[:500]
        # Offline the workers described the chunks already; this fills only what is missing.
        chunks_describe(
            [(chunk, redacted) for chunk, redacted, _ in planned], llm=self.llm, user=self.job.user
        )
        self._resolve_collisions([chunk for chunk, _, _ in planned])
        # The raw pairs by index, once per conversation (not once per chunk: long
        # conversations have hundreds of chunks).
        raw_pairs: dict[int, dict[int, TurnPair]] = {
            id(original): {p.index: p for p in original.pairs} for original in raw
        }
        chunk_items = [
            self._memory_item(chunk, redacted, original, raw_pairs[id(original)])
            for chunk, redacted, original in planned
        ]
        items = [*chunk_items]
        for (chunk, redacted, _original), chunk_item in zip(planned, chunk_items, strict=True):
            items.extend(
                chunk_passage_items(
                    chunk_item=chunk_item,
                    pairs=chunk.pairs,
                    assistant_override=chunk.assistant_override,
                    title=redacted.title or "",
                    platform=redacted.platform,
                    conversation_id=redacted.conversation_id,
                    job_id=str(self.job.id),
                    import_file_id=self.import_file.id,
                    passages=chunk.passages,
                )
            )
        if self.embedder is not None:
            # The chunks only: the passages get theirs after the file commits (passage_vectors).
            memory_items_embed(chunk_items, embedder=self.embedder)
            self.outcome.passages_deferred += len(items) - len(chunk_items)
        memory_items_copy(items)
        ImportedConversation.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["user", "conversation_key"],
            update_fields=["pair_keys", "title", "last_file", "updated_at"],
        )
        self.outcome.chunk_ids.extend(item.chunk_id for item in chunk_items)

    def _resolve_collisions(self, chunks: list[Chunk]) -> None:
        """Give a revision suffix to a chunk whose id exists with other content (an edited
        branch of a conversation imported before), so no stored chunk is overwritten."""
        taken = set(
            MemoryItem.objects.filter(chunk_id__in={c.chunk_id for c in chunks}).values_list(
                "chunk_id", flat=True
            )
        )
        seen: set[str] = set()
        for chunk in chunks:
            if chunk.chunk_id in taken or chunk.chunk_id in seen:
                base, revision = chunk.chunk_id, 2
                while (
                    f"{base}-r{revision}" in seen
                    or MemoryItem.objects.filter(chunk_id=f"{base}-r{revision}").exists()
                ):
                    revision += 1
                chunk.chunk_id = f"{base}-r{revision}"
            seen.add(chunk.chunk_id)

    def _memory_item(
        self,
        chunk: Chunk,
        redacted: Conversation,
        raw: Conversation,
        raw_by_index: dict[int, TurnPair],
    ) -> MemoryItem:
        frontmatter = build_frontmatter(chunk, redacted, agent_id=self.job.agent_id)
        content = chunk.exchange_markdown()
        raw_chunk = replace(
            chunk, pairs=[raw_by_index[p.index] for p in chunk.pairs], assistant_override=None
        )
        metadata: dict[str, Any] = {
            **frontmatter,
            "conversation_id": raw.conversation_id,
            "conversation_key": chunk.conversation_key,
            "format": raw.format,
            "pair_keys": chunk.pair_keys(),
            "import_job_id": str(self.job.id),
            "import_file_id": self.import_file.id,
        }
        if chunk.part is not None:
            metadata["part"] = chunk.part
            metadata["parts"] = chunk.parts
        moment = chunk.timestamp or redacted.created_at
        metadata["exchange_key"] = exchange_key(
            conversation_key=chunk.conversation_key, turn_range=chunk.turn_range
        )
        metadata["provenance"] = memory_provenance(
            source="import", platform=raw.platform, title=redacted.title or "", moment=moment
        )
        metadata["passage_rule"] = PASSAGE_RULE
        attachments = [name for p in chunk.pairs for name in p.attachments]
        if attachments:
            metadata["attachments"] = attachments
        return memory_item_build(
            scope=MemoryScope(
                user_id=self.job.user_id,
                app_id=self.job.app_id,
                project_id=self.job.project_id,
                agent_id=frontmatter["agent_id"],
            ),
            source=MemoryItem.Source.CHUNK,
            content=content,
            header=chunk.header,
            raw_content=raw_chunk.exchange_markdown(),
            embedding_text=chunk.embedding_text(),
            topics=[topic[:64] for topic in chunk.topics],
            metadata=metadata,
            chunk_id=chunk.chunk_id,
            # Counted when read (memory_site.tokens.stored_or_counted): only the few chunks
            # ever shown or packed need it.
            token_count=0,
            # When it was said: the pair's own time, else the conversation's; never the import.
            occurred_at=moment or timezone.now(),
            bucket_from_entities=False,  # entities are extracted after the import
            cues=chunk.cues,
        )
