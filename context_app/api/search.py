"""Search API: the retrieval service over the caller's memories, and their totals."""

from __future__ import annotations

from datetime import UTC, datetime, time

from django.utils import timezone
from django.utils.dateparse import parse_date
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from context_app.selectors import MODES, SOURCES, SearchFilters, memory_search
from ingestion_app.selectors import memory_stats
from memory_site.api_fields import (
    FieldAliasMixin,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictUUIDField,
)
from memory_site.errors import InvalidInput, UpstreamError
from memory_site.providers import ProviderError

MAX_TOP_K = 50


class StrictChoiceField(serializers.ChoiceField):
    """A choice given as a JSON string (no numbers or lists coerced to one)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


class StrictKeysMixin:
    """Refuse unknown keys (a misspelt filter would otherwise be ignored silently)."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({unknown[0]: "Unknown field."})
        return super().to_internal_value(data)


class IsoDateTimeField(serializers.DateTimeField):
    """An ISO 8601 date-time, or a date: `since` takes its start, `until` its end (UTC)."""

    def __init__(self, *, end_of_day: bool = False, **kwargs):
        self.end_of_day = end_of_day
        super().__init__(**kwargs)

    def to_internal_value(self, value):
        if not isinstance(value, str):
            self.fail("invalid", format="ISO 8601")
        day = parse_date(value) if len(value) <= 10 else None
        if day is not None:
            moment = datetime.combine(day, time.max if self.end_of_day else time.min)
            return timezone.make_aware(moment, UTC)
        return super().to_internal_value(value)


class SearchFiltersInput(FieldAliasMixin, StrictKeysMixin, serializers.Serializer):
    field_aliases = {"chat_session_id": "session_id"}

    project_id = StrictCharField(required=False, max_length=128)
    agent_id = StrictCharField(required=False, max_length=128)
    session_id = StrictUUIDField(required=False)
    chat_session_id = StrictUUIDField(required=False, help_text="Alias of `session_id`.")
    topics = serializers.ListField(
        child=StrictCharField(max_length=64), required=False, max_length=20
    )
    since = IsoDateTimeField(required=False)
    until = IsoDateTimeField(required=False, end_of_day=True)

    def validate(self, attrs):
        if attrs.get("since") and attrs.get("until") and attrs["since"] > attrs["until"]:
            raise serializers.ValidationError({"until": "Must not be before since."})
        return attrs


class SearchHitOutput(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.CharField()
    content = serializers.CharField()
    score = serializers.FloatField()
    similarity = serializers.FloatField(allow_null=True)
    keyword_rank = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()
    metadata = serializers.DictField()


class MemorySearchApi(APIView):
    class MemorySearchInput(StrictKeysMixin, serializers.Serializer):
        query = StrictCharField(max_length=4000, trim_whitespace=True)
        top_k = StrictIntegerField(required=False, default=10, min_value=1, max_value=MAX_TOP_K)
        max_tokens = StrictIntegerField(required=False, default=4000, min_value=1)
        min_similarity = StrictFloatField(required=False, min_value=-1.0, max_value=1.0)
        sources = serializers.ListField(
            child=StrictChoiceField(choices=SOURCES),
            required=False,
            allow_empty=False,
            max_length=len(SOURCES),
        )
        mode = StrictChoiceField(choices=MODES, required=False, default="hybrid")
        filters = SearchFiltersInput(required=False)
        app_id = StrictCharField(required=False, default="default", max_length=64)

    class MemorySearchOutput(serializers.Serializer):
        items = SearchHitOutput(many=True)
        total_tokens_used = serializers.IntegerField()
        query_embedding_ms = serializers.FloatField()
        search_ms = serializers.FloatField()

    @extend_schema(
        summary="Search the caller's memories",
        description=(
            "Hybrid retrieval (BM25 full text + vector similarity, fused) over the caller's "
            "facts, chunks, summaries and documents, scoped to the caller and `app_id` before "
            "ranking. Items come in rank order, packed until `max_tokens`. `mode`: hybrid, "
            "semantic (vector only) or keyword (full text only; also works when the embedding "
            "model is down). `min_similarity` drops items less similar to the query (not in "
            "keyword mode). A query with quotes or -word only returns items matching them. "
            "502 when the embedding model fails (hybrid and semantic modes)."
        ),
        request=MemorySearchInput,
        responses={200: MemorySearchOutput},
        tags=["memories"],
    )
    def post(self, request):
        serializer = self.MemorySearchInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if not data["query"]:
            raise InvalidInput("query: may not be blank.", field="query")
        filter_data = data.get("filters") or {}
        arguments = {}
        if "min_similarity" in data:
            arguments["min_similarity"] = data["min_similarity"]
        try:
            result = memory_search(
                user=request.user,
                query=data["query"],
                app_id=data["app_id"],
                top_k=data["top_k"],
                max_tokens=data["max_tokens"],
                sources=data.get("sources") or list(SOURCES),
                mode=data["mode"],
                filters=SearchFilters(
                    project_id=filter_data.get("project_id"),
                    agent_id=filter_data.get("agent_id"),
                    chat_session_id=(
                        str(filter_data["session_id"]) if filter_data.get("session_id") else None
                    ),
                    topics=list(filter_data.get("topics") or []),
                    since=filter_data.get("since"),
                    until=filter_data.get("until"),
                ),
                **arguments,
            )
        except ProviderError as exc:
            raise UpstreamError(
                f"The embedding model failed ({exc}); retry, or use mode=keyword.",
                code="embedding_failed",
            ) from exc
        return Response(self.MemorySearchOutput(result).data)


class MemoryStatsApi(APIView):
    @extend_schema(
        summary="Totals of the caller's memories",
        description=(
            "`{total, by_source: {fact, chunk, summary, document}, by_project: {project_id: n}, "
            "by_topic: {topic: n}}` (the 50 most used topics); one app's with `app_id`. Counts "
            "what the memory browser lists and the sessions pages count (per-message retrieval "
            "items, which repeat their turn-pair chunk, are not memories of their own)."
        ),
        parameters=[OpenApiParameter("app_id", OpenApiTypes.STR, OpenApiParameter.QUERY)],
        responses={200: OpenApiTypes.OBJECT},
        tags=["memories"],
    )
    def get(self, request):
        app_id = request.query_params.get("app_id") or None
        if app_id and len(app_id) > 64:
            raise InvalidInput("app_id: at most 64 characters.", field="app_id")
        return Response(memory_stats(user=request.user, app_id=app_id))
