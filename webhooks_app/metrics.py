"""The webhooks' gauges at every metrics scrape (registered in WebhooksAppConfig.ready)."""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

from webhooks_app.models import WebhookDelivery


def delivery_gauges():
    yield GaugeMetricFamily(
        "mnemo_webhook_deliveries_pending",
        "Webhook deliveries not yet delivered nor given up (first attempt or a retry due).",
        value=WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING).count(),
    )
