"""Webhook endpoints a user registers, and every delivery to them with each attempt.

Deliveries follow the Standard Webhooks conventions (https://www.standardwebhooks.com): a body
`{"type", "timestamp", "data"}` and the headers `webhook-id`, `webhook-timestamp` and
`webhook-signature` (HMAC-SHA256 over "id.timestamp.body" with the endpoint's secret). An
endpoint receives only its own user's events (and, for a chat app's key, its end users').
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from memory_site.crypto import EncryptedTextField


class WebhookEndpoint(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True, default="")
    # Event types it receives; empty: every type.
    events = ArrayField(models.CharField(max_length=32), default=list, blank=True)
    # "whsec_" + base64 of 24 random bytes, encrypted at rest; shown once, when created or rotated.
    secret = EncryptedTextField()
    enabled = models.BooleanField(default=True)
    # Why it was turned off (every retry of a delivery failed for a day), shown in the API
    # and admin; cleared when the user enables it again.
    disabled_reason = models.TextField(blank=True, default="")
    disabled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["user", "enabled"], name="webhook_user_enabled")]

    def __str__(self) -> str:
        return f"{self.url} ({self.user})"


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        # Every retry failed; no more attempts.
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(max_length=32)
    # The body sent, byte for byte the same on every attempt (the signature covers it).
    body = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    # A worker sending it holds it until then, so two workers never send it at once.
    locked_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_due")]
        verbose_name_plural = "webhook deliveries"

    @property
    def message_id(self) -> str:
        """The `webhook-id` header: the same on every attempt, so a receiver can dedupe."""
        return f"msg_{self.id.hex}"


class WebhookAttempt(models.Model):
    id = models.BigAutoField(primary_key=True)
    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    attempted_at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.FloatField(default=0.0)
    # The first characters of the receiver's answer, or the connection error.
    response_snippet = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["attempted_at", "id"]
