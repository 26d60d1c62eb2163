"""Fixtures for the import and document tests of ingestion_app."""

from __future__ import annotations

import pytest


@pytest.fixture
def upload_dir(settings, tmp_path):
    """Uploaded bytes go to a temporary directory, not var/uploads."""
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    return settings.MNEMO_UPLOAD_DIR


@pytest.fixture
def fake_embedder(fake_openai, settings):
    """Embeddings from the loopback server (fast, inspectable); headers stay local."""
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_MODEL = "text-embedding-3-small"
    settings.LLM_PROVIDER = "local"
    return fake_openai
