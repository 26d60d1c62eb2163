"""The entities API: list, read, edit, delete and merge the caller's entities."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from entities_app.models import Entity
from entities_app.selectors import (
    entities_for_user,
    entity_get_for_user,
    entity_mentions,
    entity_related,
)
from entities_app.services.entity_edits import (
    MAX_MERGE,
    entity_delete,
    entity_merge,
    entity_update,
)
from memory_site.api_fields import StrictCharField, StrictIntegerField
from memory_site.errors import InvalidInput


class EntityOutput(serializers.ModelSerializer):
    class Meta:
        model = Entity
        fields = [
            "id",
            "name",
            "normalized_name",
            "aliases",
            "type",
            "description",
            "mention_count",
            "first_mentioned_at",
            "last_mentioned_at",
            "app_id",
            "created_at",
            "updated_at",
        ]


class EntityListApi(ListAPIView):
    serializer_class = EntityOutput

    class EntityListFilter(serializers.Serializer):
        type = serializers.ChoiceField(required=False, choices=Entity.Type.choices)
        bucket = StrictCharField(required=False, max_length=32)
        q = StrictCharField(required=False, max_length=200)
        app_id = StrictCharField(required=False, max_length=64)

        def validate_bucket(self, value):
            if value not in settings.MNEMO_BUCKETS:
                raise serializers.ValidationError(
                    f"Unknown bucket; one of {', '.join(settings.MNEMO_BUCKETS)}."
                )
            return value

    @extend_schema(
        tags=["entities"],
        parameters=[
            OpenApiParameter("type", str, enum=[choice[0] for choice in Entity.Type.choices]),
            OpenApiParameter("bucket", str, description="Entities mentioned in this bucket."),
            OpenApiParameter("q", str, description="Part of the name or an alias."),
            OpenApiParameter("app_id", str),
        ],
        description="The caller's entities (people, pets, places...), most mentioned first; "
        "paginated (`page`, `page_size`).",
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = self.EntityListFilter(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        return entities_for_user(
            user=self.request.user,
            app_id=data.get("app_id"),
            type=data.get("type"),
            bucket=data.get("bucket"),
            q=(data.get("q") or "").strip() or None,
        )


class EntityDetailApi(APIView):
    class EntityUpdateInput(serializers.Serializer):
        name = StrictCharField(required=False, max_length=200)
        type = serializers.ChoiceField(required=False, choices=Entity.Type.choices)
        description = StrictCharField(required=False, allow_blank=True, max_length=1000)
        aliases = serializers.ListField(
            child=StrictCharField(max_length=200), required=False, max_length=50
        )

    class MentionOutput(serializers.Serializer):
        memory_id = serializers.IntegerField()
        kind = serializers.CharField()
        sentence = serializers.CharField()
        start = serializers.IntegerField(allow_null=True)
        end = serializers.IntegerField(allow_null=True)
        chat_session_id = serializers.UUIDField(source="memory.chat_session_id", allow_null=True)
        occurred_at = serializers.DateTimeField(source="memory.occurred_at")
        bucket = serializers.CharField(source="memory.bucket")

    class EntityDetailOutput(EntityOutput):
        description_history = serializers.JSONField()
        mentions = serializers.SerializerMethodField()
        related_entities = serializers.SerializerMethodField()

        class Meta(EntityOutput.Meta):
            fields = [
                *EntityOutput.Meta.fields,
                "description_history",
                "mentions",
                "related_entities",
            ]

        def get_mentions(self, entity) -> list[dict]:
            return EntityDetailApi.MentionOutput(entity_mentions(entity=entity), many=True).data

        def get_related_entities(self, entity) -> list[dict]:
            return [
                {
                    "id": other.id,
                    "name": other.name,
                    "type": other.type,
                    "relationship": link.relationship,
                    "reason": link.reason,
                    "strength": link.strength,
                }
                for other, link in entity_related(entity=entity)
            ]

    @extend_schema(
        responses={200: EntityDetailOutput},
        tags=["entities"],
        description="An entity with its latest 50 mentions (memory, sentence, offsets) and "
        "the entities it is linked to; 404 for another user's.",
    )
    def get(self, request, entity_id: int):
        entity = entity_get_for_user(user=request.user, entity_id=entity_id)
        return Response(self.EntityDetailOutput(entity).data)

    @extend_schema(
        request=EntityUpdateInput,
        responses={200: EntityDetailOutput},
        tags=["entities"],
        description="Rename, retype, describe (the old description is kept in history) or "
        "set the aliases of an entity. 400 when another entity has the new name: merge instead.",
    )
    def patch(self, request, entity_id: int):
        serializer = self.EntityUpdateInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        entity = entity_update(user=request.user, entity_id=entity_id, **serializer.validated_data)
        return Response(self.EntityDetailOutput(entity).data)

    @extend_schema(
        responses={204: None},
        tags=["entities"],
        description="Delete the entity, its mentions and links; the memories stay.",
    )
    def delete(self, request, entity_id: int):
        entity_delete(user=request.user, entity_id=entity_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class EntityMergeApi(APIView):
    class MergeInput(serializers.Serializer):
        target_id = StrictIntegerField(min_value=1)
        source_ids = serializers.ListField(
            child=StrictIntegerField(min_value=1), allow_empty=False, max_length=MAX_MERGE
        )

    @extend_schema(
        request=MergeInput,
        responses={200: EntityOutput},
        tags=["entities"],
        description="Merge `source_ids` into `target_id`: mentions, names (as aliases), "
        "descriptions (into history) and links move; the sources are deleted. 404 when any id "
        "is not the caller's.",
    )
    def post(self, request):
        serializer = self.MergeInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if data["target_id"] in data["source_ids"] and len(set(data["source_ids"])) == 1:
            raise InvalidInput("Merge an entity into another one.", field="source_ids")
        entity = entity_merge(
            user=request.user, target_id=data["target_id"], source_ids=data["source_ids"]
        )
        return Response(EntityOutput(entity).data)
