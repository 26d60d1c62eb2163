"""Re-embed every stored vector with the configured embedding model (after a model switch).

If the model's dimension differs from the column's, the column type and its HNSW index are
changed first. Each batch is written in its own transaction, so an interrupted run can be
resumed (`--only-missing` continues where it stopped after a dimension change).
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection, transaction
from tqdm import tqdm

from ingestion_app.models import MemoryItem
from memory_site.providers import get_embedder


def column_dimensions() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT atttypmod FROM pg_attribute
               WHERE attrelid = 'rag_store'::regclass AND attname = 'embedding'"""
        )
        row = cursor.fetchone()
    return row[0] if row and row[0] > 0 else None


def resize_embedding_column(dimensions: int) -> None:
    """Drop all vectors and change the column to vector(dimensions), rebuilding the HNSW index."""
    with transaction.atomic(), connection.cursor() as cursor:
        # Deferred FK checks queued earlier in this transaction would block the ALTER.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("DROP INDEX IF EXISTS rag_embedding_hnsw")
        cursor.execute("UPDATE rag_store SET embedding = NULL")
        cursor.execute(
            f"ALTER TABLE rag_store ALTER COLUMN embedding TYPE vector({int(dimensions)})"
        )
        cursor.execute(
            "CREATE INDEX rag_embedding_hnsw ON rag_store USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 128)"
        )


class Command(BaseCommand):
    help = "Re-embed every rag_store row with the configured embedding model."

    def add_arguments(self, parser):
        parser.add_argument(
            "--batch-size",
            type=int,
            default=settings.EMBEDDING_BATCH_SIZE,
            help="texts per embedding call (default: EMBEDDING_BATCH_SIZE)",
        )
        parser.add_argument(
            "--only-missing", action="store_true", help="only rows without a vector"
        )

    def handle(self, *args, batch_size, only_missing, **options):
        embedder = get_embedder()
        current = column_dimensions()
        if current != embedder.dimensions:
            self.stdout.write(
                f"Column is vector({current}); model {embedder.model} gives {embedder.dimensions}: resizing."
            )
            resize_embedding_column(embedder.dimensions)
            only_missing = True
        queryset = MemoryItem.objects.order_by("id")
        if only_missing:
            queryset = queryset.filter(embedding__isnull=True)
        total = queryset.count()
        done = 0
        last_id = 0
        with tqdm(total=total, unit="item", disable=not total) as progress:
            while True:
                batch = list(
                    queryset.filter(id__gt=last_id).only("id", "content", "embedding_text")[
                        :batch_size
                    ]
                )
                if not batch:
                    break
                vectors = embedder.embed([item.embedding_text or item.content for item in batch])
                with transaction.atomic():
                    for item, vector in zip(batch, vectors, strict=True):
                        MemoryItem.objects.filter(id=item.id).update(embedding=vector)
                last_id = batch[-1].id
                done += len(batch)
                progress.update(len(batch))
        self.stdout.write(
            f"Re-embedded {done} items with {embedder.name}:{embedder.model} ({embedder.dimensions} dims)."
        )
