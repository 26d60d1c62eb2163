"""`manage.py reembed` rebuilds every vector with the configured model, resizing the column."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command

from ingestion_app.models import MemoryItem
from memory_site.providers import get_embedder

pytestmark = pytest.mark.django_db


def test_reembed_replaces_vectors_from_embedding_text(user, fake_openai_embeddings):
    item = MemoryItem.objects.create(
        user=user,
        source="fact",
        content="Alice lives in Paris.",
        embedding=[0.0] * 383 + [1.0],
        embedding_text="",
    )
    chunk = MemoryItem.objects.create(
        user=user,
        source="chunk",
        content="User: hi\nAssistant: hello",
        embedding=[0.0] * 383 + [1.0],
        embedding_text="Greeting chunk header.\nhi",
    )
    call_command("reembed")
    item.refresh_from_db()
    chunk.refresh_from_db()
    expected = get_embedder().embed(["Alice lives in Paris.", "Greeting chunk header.\nhi"])
    assert np.allclose(item.embedding, expected[0], atol=1e-5)
    assert np.allclose(chunk.embedding, expected[1], atol=1e-5)
    sent = fake_openai_embeddings.bodies("/embeddings")[-1]["input"]
    assert "Greeting chunk header.\nhi" in sent and "User: hi\nAssistant: hello" not in sent


def test_reembed_resizes_column_when_the_model_dimension_changes(
    user, fake_openai_embeddings, settings
):
    MemoryItem.objects.create(
        user=user, source="fact", content="Bob plays chess.", embedding=[0.1] * 384
    )
    settings.EMBEDDING_DIMENSIONS = 64
    fake_openai_embeddings.dimensions = 64
    call_command("reembed")
    stored = MemoryItem.objects.get()
    assert len(stored.embedding) == 64
