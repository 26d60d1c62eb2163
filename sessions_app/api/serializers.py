from __future__ import annotations

from rest_framework import serializers

from memory_site.api_fields import (
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictUUIDField,
)
from sessions_app.models import ChatSession, Message


class SessionRefInput(serializers.Serializer):
    session_id = StrictUUIDField()


class SessionOpenInput(serializers.Serializer):
    title = StrictCharField(required=False, allow_blank=True, max_length=200, default="")
    agent_id = StrictCharField(required=False, allow_blank=True, max_length=128, default="")
    project_id = StrictCharField(required=False, allow_blank=True, max_length=128, default="")
    app_id = StrictCharField(required=False, max_length=64, default="default")
    close_session_id = StrictUUIDField(required=False, allow_null=True, default=None)
    metadata = JSONObjectField(required=False, default=dict)


class VisibilityInput(SessionRefInput):
    visible = StrictBooleanField()


class MessageInput(SessionRefInput):
    role = serializers.ChoiceField(choices=Message.Role.choices)
    content = StrictCharField(max_length=200_000, trim_whitespace=False)
    model = StrictCharField(required=False, allow_blank=True, max_length=128, default="")

    def validate_content(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Must not be empty.")
        return value


class SessionOutput(serializers.ModelSerializer):
    session_id = serializers.UUIDField(source="id")

    class Meta:
        model = ChatSession
        fields = [
            "session_id",
            "status",
            "title",
            "app_id",
            "agent_id",
            "project_id",
            "visible",
            "opened_at",
            "last_heartbeat_at",
            "closed_at",
            "close_error",
            "metadata",
        ]


class MessageOutput(serializers.ModelSerializer):
    session_id = serializers.UUIDField()

    class Meta:
        model = Message
        fields = ["id", "session_id", "role", "token_count", "created_at"]


class MessageDetailOutput(serializers.ModelSerializer):
    """A message as its owner sees it: the original text (decrypted) and the redacted copy."""

    class Meta:
        model = Message
        fields = [
            "id",
            "role",
            "content",
            "content_sanitized",
            "token_count",
            "model",
            "incomplete",
            "created_at",
        ]


class SessionDetailOutput(SessionOutput):
    messages = MessageDetailOutput(many=True, read_only=True)
    summary = serializers.SerializerMethodField()
    tags = serializers.SerializerMethodField()

    class Meta(SessionOutput.Meta):
        fields = SessionOutput.Meta.fields + ["messages", "summary", "tags"]

    def get_summary(self, session) -> dict | None:
        summary = getattr(session, "summary", None)
        if summary is None:
            return None
        return {
            "text": summary.summary,
            "token_estimate": summary.token_estimate,
            "created_at": summary.created_at,
        }

    def get_tags(self, session) -> list[dict]:
        return [
            {"tag": tag.tag, "confidence": round(tag.confidence, 3)} for tag in session.tags.all()
        ]
