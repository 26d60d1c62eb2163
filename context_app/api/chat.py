"""`POST /api/v1/ai/chat/stream`: a chat turn streamed as server-sent events.

A DRF view (authentication, parsing, validation and the JSON error envelope work as everywhere
else) whose response is a `StreamingHttpResponse` over an async generator: Django serves it from
the event loop under ASGI, so the model's deltas reach the client as they arrive. Everything
that can fail with a 4xx happens before the response starts.
"""

from __future__ import annotations

import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from context_app.services.chat_stream import chat_turn_frames, chat_turn_start
from memory_site import sse
from memory_site.api_fields import StrictCharField, StrictUUIDField
from sessions_app.selectors import MESSAGE_ROLE_CHOICES

MAX_MESSAGES = 200
MAX_ATTACHMENTS = 20
_MODEL_NAME = re.compile(r"^[\w.:/@+-]+$")
_DEBUG_ON = {"1", "true", "yes", "on"}


class ChatMessageInput(serializers.Serializer):
    role = serializers.ChoiceField(choices=MESSAGE_ROLE_CHOICES)
    content = StrictCharField(max_length=200_000, trim_whitespace=False, allow_blank=True)


class AttachmentInput(serializers.Serializer):
    filename = StrictCharField(max_length=255)
    content_type = StrictCharField(required=False, allow_blank=True, max_length=127, default="")
    text = StrictCharField(trim_whitespace=False, allow_blank=True)


class ChatStreamInput(serializers.Serializer):
    session_id = StrictUUIDField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Stores the turn in this open session; required for context augmentation.",
    )
    context_version = serializers.ChoiceField(
        choices=["v1", "v2"],
        required=False,
        default="v2",
        help_text=(
            "v2 (the default) prepends the context pack (with a session_id); v1 turns "
            "memory off for this turn."
        ),
    )
    messages = ChatMessageInput(many=True, min_length=1, max_length=MAX_MESSAGES)
    previous_response_id = StrictCharField(
        required=False, allow_blank=True, max_length=200, default=""
    )
    attachments = AttachmentInput(
        many=True, required=False, max_length=MAX_ATTACHMENTS, default=list
    )
    model = StrictCharField(required=False, allow_blank=True, max_length=128, default="")

    def validate_messages(self, value: list[dict]) -> list[dict]:
        last = value[-1]
        if last["role"] != "user":
            raise serializers.ValidationError("The last message must be the user's new turn.")
        if not last["content"].strip():
            raise serializers.ValidationError("The last message must not be empty.")
        return value

    def validate_model(self, value: str) -> str:
        if value and not _MODEL_NAME.match(value):
            raise serializers.ValidationError("Not a valid model name.")
        return value


class JSONErrorsNegotiation(DefaultContentNegotiation):
    """Errors raised before the stream starts are JSON, whatever the client's Accept says
    (an SSE client sends `Accept: text/event-stream`); the body must be JSON (else 415)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        renderer = JSONRenderer()
        return renderer, renderer.media_type


_ERROR = OpenApiResponse(
    response=OpenApiTypes.OBJECT, description='`{"error": {"code", "message", "field"?}}`'
)


class ChatStreamApi(APIView):
    content_negotiation_class = JSONErrorsNegotiation

    @extend_schema(
        operation_id="ai_chat_stream",
        summary="Stream a chat reply (server-sent events), with the context pack",
        description=(
            "Stores the user message (with `session_id`), prepends the context pack as one "
            "system message when `context_version` is `v2`, and streams the reply as SSE:\n\n"
            "- `event: context` (only with `X-Reggie-Context-Debug: 1`): `{status, reason, turn, "
            "topic, segments: [{name, chars, truncated}], pack, hash, reused, memories, elapsed_ms}`\n"
            '- `event: message`: `{"chunk": "...", "id": "<response id>"}`, repeated\n'
            '- `event: done`: `{"status": "completed", "id", "model", "message_ids": {"user", '
            '"assistant"}, "usage": {"tokens_in", "tokens_out"}, "context": {"chars", "hash"}}`\n'
            "- `event: error`: `{code, message}` when the model fails (the user message is kept)\n\n"
            "A `: keepalive` comment is sent when nothing else was sent for 10 s. Response headers "
            "`X-Reggie-Topic`, `X-Reggie-Topic-Title`, `X-Reggie-Topic-Score` (and "
            "`X-Reggie-Topic-Source`: inferred, session_override, user_override) when the pack has "
            "a topic. Input, authentication and session errors are JSON (400/401/404/409) and "
            "happen before the stream starts. A client that disconnects mid-stream gets the "
            "partial reply stored, marked incomplete."
        ),
        request=ChatStreamInput,
        parameters=[
            OpenApiParameter(
                "X-Reggie-Context",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="`preview` (accepted; recorded with the message).",
            ),
            OpenApiParameter(
                "X-Reggie-Context-Debug",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="`1` adds the `context` event showing the pack and why it was built.",
            ),
        ],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                response=OpenApiTypes.STR, description="The SSE stream described above."
            ),
            400: _ERROR,
            401: _ERROR,
            404: _ERROR,
            409: _ERROR,
        },
        examples=[
            OpenApiExample(
                "Third turn of a session, with context",
                request_only=True,
                value={
                    "session_id": "6f1c1f56-2d7a-4d0e-9a43-1f0a3e2b9c11",
                    "context_version": "v2",
                    "messages": [{"role": "user", "content": "Which pass should I buy for Kyoto?"}],
                },
            )
        ],
        tags=["chat"],
    )
    def post(self, request):
        serializer = ChatStreamInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        turn = chat_turn_start(
            user=request.user,
            debug=request.headers.get("X-Reggie-Context-Debug", "").strip().lower() in _DEBUG_ON,
            context_header=request.headers.get("X-Reggie-Context", ""),
            **data,
        )
        frames = sse.with_keepalive(chat_turn_frames(turn), interval=sse.KEEPALIVE_SECONDS)
        return sse.sse_response(frames, headers=turn.headers())
