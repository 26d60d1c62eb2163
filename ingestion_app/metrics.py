"""The memory store's gauges at every metrics scrape (registered in IngestionAppConfig.ready)."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

from ingestion_app.models import MemoryItem


def store_gauges():
    yield GaugeMetricFamily(
        "mnemo_memories_without_vector",
        "Stored memories whose embedding is still to come (deferred or failed).",
        value=MemoryItem.objects.filter(embedding__isnull=True).count(),
    )
