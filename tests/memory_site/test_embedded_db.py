"""The embedded server is tuned to the machine on first start."""

from __future__ import annotations

import re

from memory_site.embedded_db import MIB, tuning


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
