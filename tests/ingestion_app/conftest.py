"""Fixtures for the import and document tests of ingestion_app."""

from __future__ import annotations

import pytest


@pytest.fixture
def upload_dir(settings, tmp_path):
    """Uploaded bytes go to a temporary directory, not var/uploads."""
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    return settings.MNEMO_UPLOAD_DIR
