"""What the gateway remembers about the conversations chat apps send through it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class GatewayConversation(models.Model):
    """One chat-app conversation, matched across calls by a stable key.

    Chat apps resend the whole conversation every turn and send no session id. The key is a
    hash of (system prompt, first user message) or of an explicit session id; the row is the
    lock that serializes concurrent calls of one conversation, and `message_hashes` lists the
    conversation's messages already stored (user and assistant text, in order), so each call
    appends only what is new. `session` is the open Mnemo session the conversation writes to;
    once it closes (idle sessions close through the stale-heartbeat path) the next call opens
    a new one and carries on.
    """

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gateway_conversations"
    )
    key = models.CharField(max_length=64)
    session = models.ForeignKey(
        "sessions_app.ChatSession",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="gateway_conversations",
    )
    message_hashes = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="gateway_conversation_key")
        ]

    def __str__(self) -> str:
        return f"conversation {self.key[:12]} of user {self.user_id}"
