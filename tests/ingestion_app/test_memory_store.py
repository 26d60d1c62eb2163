"""The one builder of rag_store rows: scope, the content-hash rule of each kind, token count."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection

from ingestion_app.models import MemoryItem
from ingestion_app.services.memory_store import (
    MemoryScope,
    memory_content_hash_for,
    memory_item_build,
    memory_item_create,
    memory_items_bulk_create,
    memory_items_copy,
    memory_items_embed,
)
from memory_site.tokens import count_tokens
from tests.factories import add_message, memory_write, open_session

pytestmark = pytest.mark.django_db


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_fact_hashes_case_and_spacing_folded_every_other_kind_its_text_as_stored():
    fact = memory_content_hash_for(source=MemoryItem.Source.FACT, text="Lives in  Berlin")
    assert fact == memory_content_hash_for(source="fact", text="lives in berlin")
    assert fact == sha256("lives in berlin")
    for source in ("chunk", "summary", "document"):
        stored = memory_content_hash_for(source=source, text="Lives in  Berlin")
        assert stored == sha256("Lives in  Berlin")
        assert stored != memory_content_hash_for(source=source, text="lives in berlin")


def test_an_item_of_a_session_carries_its_scope_hash_and_token_count(user):
    session = open_session(user, project_id="garden", agent_id="helper")

    item = memory_item_create(
        scope=MemoryScope.of_session(session),
        source=MemoryItem.Source.SUMMARY,
        content="The user grows tomatoes and basil on the balcony.",
    )

    stored = MemoryItem.objects.get(id=item.id)
    assert (stored.user_id, stored.app_id, stored.project_id, stored.agent_id) == (
        user.id,
        session.app_id,
        "garden",
        "helper",
    )
    assert stored.chat_session_id == session.id
    assert stored.content_hash == sha256(stored.content)
    assert stored.token_count == count_tokens(stored.content)


def test_a_mapped_project_and_a_counted_token_figure_override_the_defaults(user):
    session = open_session(user, project_id="garden")

    items = memory_items_bulk_create(
        [
            memory_item_build(
                scope=MemoryScope.of_session(session, project_id="allotment", rag_session_id="r1"),
                source=MemoryItem.Source.FACT,
                content="Grows Tomatoes.",
                token_count=42,
            )
        ]
    )

    stored = MemoryItem.objects.get(id=items[0].id)
    assert (stored.project_id, stored.rag_session_id, stored.token_count) == ("allotment", "r1", 42)
    assert stored.content_hash == sha256("grows tomatoes.")


def test_message_items_are_stored_with_the_raw_text_hash(user, fake_embedder):
    session = open_session(user)
    add_message(session, "user", "I planted Tomatoes today.")

    item = MemoryItem.objects.get(chat_session=session, metadata__granularity="message")

    assert item.content_hash == sha256(item.content)
    assert item.token_count == count_tokens(item.content)


class CountingEmbedder:
    """Records every text it is asked to embed; the vector says which text it was."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return [[float(len(self.texts) - len(texts) + i)] for i in range(len(texts))]


def test_items_with_the_same_text_are_embedded_once_and_share_the_vector(user):
    scope = MemoryScope(user_id=user.id, app_id="default")
    items = [
        memory_item_build(scope=scope, source="chunk", content=text, embedding_text=embedded)
        for text, embedded in [
            ("User: I live in Austin.", "(3 May 2024) User: I live in Austin."),
            ("User: I live in Austin.", "(3 May 2024) User: I live in Austin."),
            ("Assistant: Austin is in Texas.", ""),
        ]
    ]
    embedder = CountingEmbedder()

    memory_items_embed(items, embedder=embedder)

    assert embedder.texts == [
        "(3 May 2024) User: I live in Austin.",
        "Assistant: Austin is in Texas.",
    ]
    assert items[0].embedding == items[1].embedding == [0.0]
    assert items[2].embedding == [1.0]


def test_copied_items_keep_the_moment_they_were_said_and_get_an_update_time(user, settings):
    settings.TIME_ZONE = "Europe/Amsterdam"  # a naive moment is read in the site's time zone
    scope = MemoryScope(user_id=user.id, app_id="default")
    said_in_tokyo = datetime(2024, 3, 1, 9, 30, tzinfo=timezone(timedelta(hours=9)))
    naive = datetime(2024, 3, 1, 9, 30)
    before = datetime.now(UTC)
    items = [
        memory_item_build(scope=scope, source="chunk", content="Tokyo", occurred_at=said_in_tokyo),
        memory_item_build(scope=scope, source="chunk", content="Local", occurred_at=naive),
    ]

    with pytest.warns(RuntimeWarning, match="naive datetime"):
        memory_items_copy(items)

    tokyo, local = (MemoryItem.objects.get(content=text) for text in ("Tokyo", "Local"))
    assert tokyo.occurred_at == datetime(2024, 3, 1, 0, 30, tzinfo=UTC)
    assert local.occurred_at == datetime(2024, 3, 1, 8, 30, tzinfo=UTC)
    assert tokyo.updated_at >= before and tokyo.created_at >= before


def test_a_chat_sized_row_keeps_its_embedding_and_text_in_the_row(user):
    """A search reads every scoped row's embedding and metadata: a typical row (~4 kB, the
    embedding alone 1.5 kB) must not have them moved to TOAST, where each read costs an index
    lookup and more pages."""
    item = memory_write(
        user,
        "We rebuilt the HNSW index after the Postgres upgrade; it took two hours. " * 25,
        source="chunk",
        metadata={"speaker": "user", "notes": "x" * 600},
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_size(r.*) FROM rag_store AS r WHERE id = %s", [item.id])
        assert 3000 < cursor.fetchone()[0] < 8000  # over the default 2 kB target
        cursor.execute("SHOW server_version_num")
        if int(cursor.fetchone()[0]) < 170000:
            pytest.skip("pg_column_toast_chunk_id needs PostgreSQL 17")
        cursor.execute(
            "SELECT pg_column_toast_chunk_id(embedding), pg_column_toast_chunk_id(content),"
            " pg_column_toast_chunk_id(metadata) FROM rag_store WHERE id = %s",
            [item.id],
        )
        assert cursor.fetchone() == (None, None, None)
