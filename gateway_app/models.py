"""What the gateway remembers about the conversations chat apps send through it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory_site.crypto import EncryptedTextField


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


class EndUserGrant(models.Model):
    """An API key's right to act for the end users of one chat app (off unless this exists).

    A chat app (Open WebUI, LibreChat) reaches Mnemo with one key; with this grant, a call
    that names a verified end user acts as that end user's own Mnemo user (`EndUser`), so
    two people using one app never share a memory. `mode`: "jwt" accepts only a signed
    identity (HS256 with `jwt_secret`, checked for signature, `exp` and `iss`); "headers"
    also accepts a plain user-id header (`user_id_header`) or OpenAI's `user` field, for an
    app on a trusted network. The key owner's own user is used when a call names nobody.
    """

    class Mode(models.TextChoices):
        JWT = "jwt", "signed JWT only"
        HEADERS = "headers", "signed JWT, user-id header or the OpenAI `user` field"

    app_user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="end_user_grant"
    )
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.JWT)
    jwt_secret = EncryptedTextField(blank=True, default="")
    jwt_issuer = models.CharField(
        max_length=200, blank=True, default="open-webui", help_text="Expected `iss`; blank: any."
    )
    user_id_header = models.CharField(
        max_length=100,
        default="X-OpenWebUI-User-Id",
        help_text="The plain user-id header read in headers mode (LibreChat: a custom header "
        "filled with {{LIBRECHAT_USER_ID}}).",
    )
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"end users of {self.app_user} ({self.mode})"


class EndUser(models.Model):
    """One end user of a chat app, and the Mnemo user that holds their memory (created on
    first sight, never shared with another app's end user of the same id)."""

    id = models.BigAutoField(primary_key=True)
    app_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="end_users"
    )
    external_id = models.CharField(max_length=255)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="end_user_of"
    )
    email = models.CharField(max_length=254, blank=True, default="")
    name = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app_user", "external_id"], name="end_user_of_app")
        ]

    def __str__(self) -> str:
        return f"{self.external_id} of {self.app_user}"
