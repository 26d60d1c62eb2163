"""CPU time of a benchmark's queries, apart from time spent waiting for a CPU."""

from __future__ import annotations

import os
import time
from pathlib import Path


class CpuClock:
    """CPU time of this process plus the database backend serving it (Linux schedstat, ns),
    so a query's own cost can be read apart from waiting for a CPU on a busy machine.

    Only for the embedded server (a backend pid on this machine); None otherwise.
    """

    def __init__(self) -> None:
        from django.db import connection

        self.path: Path | None = None
        if connection.vendor == "postgresql" and not os.environ.get("DATABASE_URL"):
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                path = Path(f"/proc/{cursor.fetchone()[0]}/schedstat")
            self.path = path if path.exists() else None

    def now_ms(self) -> float | None:
        if self.path is None:
            return None
        try:
            backend_ns = int(self.path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return backend_ns / 1e6 + time.process_time() * 1000
