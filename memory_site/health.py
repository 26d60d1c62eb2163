"""GET /api/health: is the database up, is pgvector there, is a task worker alive. No data."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_q.status import Stat
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_site.errors import RETRY_AFTER_SECONDS


def _database_ok() -> tuple[bool, bool]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        return True, row is not None
    except Exception:
        return False, False


def _worker_state() -> str:
    """'sync' when tasks run inline (tests), 'ok' when a django-q2 cluster reported in the
    last minute (its stats live in the shared database cache), else 'down'."""
    if settings.Q_CLUSTER.get("sync"):
        return "sync"
    try:
        stats = Stat.get_all()
    except Exception:
        return "unknown"
    now = timezone.now()
    fresh = [
        stat for stat in stats if stat.timestamp and now - stat.timestamp < timedelta(minutes=1)
    ]
    return "ok" if fresh else "down"


HEALTH_OUTPUT = inline_serializer(
    "Health",
    {
        "database": serializers.CharField(),
        "vector": serializers.CharField(),
        "worker": serializers.CharField(),
    },
)


class HealthApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(tags=["health"], responses={200: HEALTH_OUTPUT, 503: HEALTH_OUTPUT})
    def get(self, request):
        """Component status only, no data; 503 when the database or pgvector is missing."""
        database, vector = _database_ok()
        body = {
            "database": "ok" if database else "down",
            "vector": "ok" if vector else "missing",
            "worker": _worker_state(),
        }
        response = Response(body, status=200 if database and vector else 503)
        if response.status_code == 503:
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
