"""The memories API: list, read, edit, delete a user's rag_store items and read their history."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion_app.models import FactHistory, MemoryItem
from ingestion_app.selectors import memories_for_user, memory_get_for_user, memory_history
from ingestion_app.services.commit.add import memory_fact_add
from ingestion_app.services.memories import memory_delete, memory_update
from memory_site.api_fields import (
    FieldAliasMixin,
    JSONObjectField,
    StrictCharField,
    StrictUUIDField,
)


class MemoryOutput(serializers.ModelSerializer):
    """A memory as its owner sees it; never the embedding or the encrypted original text."""

    role = serializers.CharField(source="source", read_only=True, help_text="Same as `source`.")
    session_id = serializers.UUIDField(source="chat_session_id", allow_null=True, read_only=True)
    chat_session_id = serializers.UUIDField(
        allow_null=True, read_only=True, help_text="Same as `session_id`."
    )

    class Meta:
        model = MemoryItem
        fields = [
            "id",
            "source",
            "role",
            "content",
            "header",
            "topics",
            "app_id",
            "project_id",
            "session_id",
            "chat_session_id",
            "rag_session_id",
            "source_message_ids",
            "metadata",
            "occurred_at",
            "created_at",
            "updated_at",
        ]


class MemoryListApi(ListAPIView):
    serializer_class = MemoryOutput

    class MemoryListFilter(FieldAliasMixin, serializers.Serializer):
        field_aliases = {"role": "source", "chat_session_id": "session_id"}

        project_id = StrictCharField(required=False, max_length=128)
        source = serializers.ChoiceField(required=False, choices=MemoryItem.Source.choices)
        session_id = StrictUUIDField(required=False)
        app_id = StrictCharField(required=False, max_length=64)
        q = StrictCharField(required=False, max_length=500)
        include_message_items = serializers.BooleanField(required=False, default=False)

    @extend_schema(
        tags=["memories"],
        parameters=[
            OpenApiParameter("project_id", str),
            OpenApiParameter("source", str, enum=[c[0] for c in MemoryItem.Source.choices]),
            OpenApiParameter(
                "role",
                str,
                enum=[c[0] for c in MemoryItem.Source.choices],
                description="Alias of `source`.",
            ),
            OpenApiParameter("session_id", OpenApiTypes.UUID),
            OpenApiParameter(
                "chat_session_id", OpenApiTypes.UUID, description="Alias of `session_id`."
            ),
            OpenApiParameter("app_id", str),
            OpenApiParameter("q", str, description="Full-text search (web syntax) over the text."),
            OpenApiParameter(
                "include_message_items",
                bool,
                description="Also list the retrieval items that repeat part of a turn-pair chunk "
                "(chunks of one message, an import's passages of a long reply); hidden by "
                "default.",
            ),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    class MemoryAddInput(serializers.Serializer):
        text = StrictCharField(max_length=10_000)
        project_id = StrictCharField(required=False, allow_blank=True, max_length=128, default="")

    class MemoryAddOutput(serializers.Serializer):
        status = serializers.ChoiceField(choices=["added", "updated", "known", "duplicate"])
        memory_id = serializers.IntegerField(allow_null=True)
        content = serializers.CharField()
        previous_content = serializers.CharField(required=False)

    @extend_schema(
        tags=["memories"],
        request=MemoryAddInput,
        responses={201: MemoryAddOutput, 200: MemoryAddOutput},
        description="Remember one fact, by Commit to Memory's rules: 201 `added` or `updated` "
        "(a new value of a stored fact, whose old text goes to its history); 200 `duplicate` "
        "(nearly the same as memory `memory_id`) or `known`.",
    )
    def post(self, request, *args, **kwargs):
        serializer = self.MemoryAddInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = memory_fact_add(user=request.user, **serializer.validated_data)
        created = result.event in ("ADD", "UPDATE")
        return Response(
            result.as_dict(), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )

    def get_queryset(self):
        filters = self.MemoryListFilter(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        return memories_for_user(
            user=self.request.user,
            project_id=data.get("project_id"),
            source=data.get("source"),
            chat_session_id=data.get("session_id"),
            app_id=data.get("app_id"),
            q=(data.get("q") or "").strip() or None,
            include_message_items=data.get("include_message_items", False),
        )


class MemoryDetailApi(APIView):
    class MemoryUpdateInput(serializers.Serializer):
        content = StrictCharField(required=False, max_length=20_000, trim_whitespace=False)
        topics = serializers.ListField(
            child=StrictCharField(max_length=64), required=False, max_length=20
        )
        metadata = JSONObjectField(required=False)
        project_id = StrictCharField(required=False, allow_blank=True, max_length=128)
        reason = StrictCharField(required=False, allow_blank=True, max_length=500, default="")

    @extend_schema(responses={200: MemoryOutput}, tags=["memories"])
    def get(self, request, memory_id: int):
        memory = memory_get_for_user(user=request.user, memory_id=memory_id)
        return Response(MemoryOutput(memory).data)

    @extend_schema(
        request=MemoryUpdateInput,
        responses={200: MemoryOutput},
        tags=["memories"],
        description="Edit a memory; new content is redacted, re-embedded and kept in history.",
    )
    def patch(self, request, memory_id: int):
        serializer = self.MemoryUpdateInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        memory = memory_update(user=request.user, memory_id=memory_id, **serializer.validated_data)
        return Response(MemoryOutput(memory).data)

    @extend_schema(responses={204: None}, tags=["memories"], description="Delete for real.")
    def delete(self, request, memory_id: int):
        memory_delete(user=request.user, memory_id=memory_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryHistoryApi(APIView):
    class MemoryHistoryOutput(serializers.ModelSerializer):
        class Meta:
            model = FactHistory
            fields = ["id", "event", "previous_content", "new_content", "reason", "created_at"]

    class MemoryHistoryResponse(serializers.Serializer):
        memory_id = serializers.IntegerField()
        count = serializers.IntegerField()
        results = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        responses={200: MemoryHistoryResponse},
        tags=["memories"],
        description="`{memory_id, count, results}`: every ADD/UPDATE/EDIT, oldest first, "
        "with the previous and new text and the reason.",
    )
    def get(self, request, memory_id: int):
        memory = memory_get_for_user(user=request.user, memory_id=memory_id)
        history = list(memory_history(memory=memory))
        return Response(
            {
                "memory_id": memory.id,
                "count": len(history),
                "results": self.MemoryHistoryOutput(history, many=True).data,
            }
        )
