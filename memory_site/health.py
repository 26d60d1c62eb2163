"""GET /api/health: is the database up, is pgvector there, is a task worker alive. No data."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET


def _database_ok() -> tuple[bool, bool]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        return True, row is not None
    except Exception:
        return False, False


def _worker_state() -> str:
    """'sync' in test mode, 'ok' when a django-q2 cluster reported in the last minute."""
    from django.conf import settings

    if settings.Q_CLUSTER.get("sync"):
        return "sync"
    try:
        from django_q.status import Stat

        stats = Stat.get_all()
        fresh = [s for s in stats if s.timestamp and timezone.now() - s.timestamp < timedelta(minutes=1)]
        return "ok" if fresh else "down"
    except Exception:
        return "unknown"


@require_GET
def health(request):
    database, vector = _database_ok()
    worker = _worker_state()
    status = 200 if database and vector else 503
    return JsonResponse(
        {"database": "ok" if database else "down", "vector": "ok" if vector else "missing", "worker": worker},
        status=status,
    )
