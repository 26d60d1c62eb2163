"""Heartbeat leases for background work that must be resumed when its worker dies.

A job row (import, document ingest) is claimed by a conditional UPDATE that sets its status to
running, bumps ``attempts`` and stamps ``heartbeat_at``; while the worker works, a thread renews
``heartbeat_at`` every quarter of the lease. A worker that is killed stops renewing, the lease
runs out after ``MNEMO_JOB_LEASE_SECONDS`` and the one-minute resume schedule queues the job
again, where the claim lets exactly one worker take it. ``attempts`` is the fencing token: a
worker that finds its attempt number replaced has lost the job and stops.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.db import connection, models
from django.utils import timezone

logger = logging.getLogger(__name__)


def lease_seconds() -> float:
    return float(settings.MNEMO_JOB_LEASE_SECONDS)


def lease_expired_before() -> timezone.datetime:
    """Rows whose heartbeat is older than this are abandoned (their worker stopped renewing)."""
    return timezone.now() - timedelta(seconds=lease_seconds())


class LeaseKeeper:
    """Renews one row's ``heartbeat_at`` from a background thread while the ``with`` block runs.

    The renewal is conditional on the row still being ``running`` with this worker's attempt
    number, so a worker that lost the job never extends the new holder's lease; the worker
    itself finds out with ``lease_held`` (on its own connection, between steps).
    """

    def __init__(self, model: type[models.Model], pk, *, attempt: int) -> None:
        self.model = model
        self.pk = pk
        self.attempt = attempt
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lease-{model._meta.db_table}-{pk}", daemon=True
        )

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        interval = max(lease_seconds() / 4, 0.05)
        try:
            while not self._stop.wait(interval):
                self.model.objects.filter(
                    pk=self.pk, status="running", attempts=self.attempt
                ).update(heartbeat_at=timezone.now())
        except Exception:  # a renewal that fails only shortens the lease; never kill the job
            logger.warning("renewing the lease of %s %s failed", self.model.__name__, self.pk)
        finally:
            connection.close()


def lease_held(model: type[models.Model], pk, *, attempt: int) -> bool:
    """Whether this worker still holds the job (running, same attempt): checked between steps."""
    return model.objects.filter(pk=pk, status="running", attempts=attempt).exists()
