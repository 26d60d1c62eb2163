"""Search API: the retrieval service over the caller's memories, and their totals."""

from __future__ import annotations

from datetime import UTC, datetime, time

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_date
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from entities_app.selectors import cross_references_of_items, entity_total
from ingestion_app.selectors import memory_stats
from ingestion_app.services.deferred_embeddings import READ_WAIT_SECONDS, pending_embeddings_wait
from memory_site.api_fields import (
    FieldAliasMixin,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictUUIDField,
)
from memory_site.errors import InvalidInput, UpstreamError
from memory_site.providers import ProviderError
from retrieval.search import MODES, SOURCES, SearchFilters, memory_search, search_entities

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
        try:
            day = parse_date(value) if len(value) <= 10 else None
        except ValueError:  # shaped like a date but not one (2025-02-30)
            self.fail("invalid", format="ISO 8601")
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


class WhyOutput(serializers.Serializer):
    signal = serializers.ChoiceField(
        choices=["keyword", "vector", "entity", "recency"],
        help_text="keyword: BM25 full text; vector: embedding similarity; recency: age weight.",
    )
    rank = serializers.IntegerField(
        allow_null=True, help_text="1-based rank of the item on that signal alone."
    )
    score = serializers.FloatField(
        help_text="keyword: BM25 score; vector: cosine similarity; recency: weight in [0.5, 1]."
    )


class SupersededOutput(serializers.Serializer):
    by = serializers.IntegerField(help_text="Id of the later memory about the same subject.")
    occurred_at = serializers.DateTimeField(allow_null=True, help_text="When this was said.")
    by_occurred_at = serializers.DateTimeField(
        allow_null=True, help_text="When the later memory was said."
    )


class TrimmedOutput(serializers.Serializer):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    length = serializers.IntegerField(help_text="Length of the whole item's content.")


class SearchHitOutput(serializers.Serializer):
    type = serializers.CharField(default="memory", help_text="memory (or entity, see below)")
    id = serializers.IntegerField()
    source = serializers.CharField()
    content = serializers.CharField(
        help_text="The item's text, or the passage of a long item that matches, or a chat turn "
        "without the reactions and questions around what it tells, or (below the first three "
        "results) its gist of ~120 characters (see trimmed)."
    )
    bucket = serializers.CharField()
    score = serializers.FloatField()
    relevance = serializers.FloatField(
        help_text="How sure the ranking is that the item is about the query, 0 to 1."
    )
    why = WhyOutput(many=True, help_text="The signals that matched, strongest first.")
    similarity = serializers.FloatField(allow_null=True)
    keyword_rank = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()
    occurred_at = serializers.DateTimeField(help_text="When the thing was said.")
    provenance = serializers.SerializerMethodField(
        help_text="Where the item came from, in words (when the writer recorded it)."
    )
    superseded = SupersededOutput(
        allow_null=True, help_text="Set when a later memory about the same subject disagrees."
    )
    trimmed = TrimmedOutput(
        allow_null=True, help_text="Set when content was cut from the item (offsets into its text)."
    )
    metadata = serializers.DictField()
    cross_references = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="With include_cross_refs: links to other items and entities "
        "({relationship, direction, type, id, reason, strength}); relationship is "
        "mentions_same_entity, follows_up, related or updates (direction outgoing: this memory gives a new "
        "value of what the other states; incoming: a later memory replaces this one).",
    )

    def get_provenance(self, hit) -> str | None:
        return (hit.metadata or {}).get("provenance") or None


class SearchEntityOutput(serializers.Serializer):
    type = serializers.SerializerMethodField()
    id = serializers.IntegerField()
    name = serializers.CharField()
    entity_type = serializers.CharField(source="type")
    description = serializers.CharField()
    mention_count = serializers.IntegerField()
    aliases = serializers.ListField(
        child=serializers.CharField(),
        help_text='Other names that resolve to it, normalized ("anna costa", "my sister").',
    )
    content = serializers.CharField(source="prompt_line")

    def get_type(self, entity) -> str:
        return "entity"


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
        as_of = IsoDateTimeField(
            required=False,
            end_of_day=True,
            help_text=(
                "Rank as of this date (ISO 8601 date or date-time): of two memories about the "
                "same subject, the latest said by then comes first."
            ),
        )
        buckets = serializers.ListField(
            child=StrictCharField(max_length=32), required=False, allow_empty=True, max_length=20
        )
        include_entities = serializers.BooleanField(required=False, default=False)
        include_cross_refs = serializers.BooleanField(required=False, default=False)
        trim = serializers.BooleanField(
            required=False,
            default=True,
            help_text="false: every item whole (no passages, gists or reactions cut).",
        )

        def validate_buckets(self, value):
            unknown = [bucket for bucket in value if bucket not in settings.MNEMO_BUCKETS]
            if unknown:
                raise serializers.ValidationError(
                    f"Unknown bucket {unknown[0]!r}; one of {', '.join(settings.MNEMO_BUCKETS)}."
                )
            return value

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
            "Items under the relevance floor are left out, so a query about something never "
            "discussed returns no items; each item says `why` it matched and its `relevance`. "
            "One exchange takes one slot; a long item is cut to its matching passage, a chat "
            "turn to what it tells without reactions like 'Wow, Mel!', and below the first "
            "three results to its gist (its sentences with the query's words, else its first "
            "that tell something; `trimmed`; `trim: false` gives every item whole). Of two "
            "memories about the same subject the later comes first and the older is "
            "`superseded` (both dates given); `as_of` ranks relative to that date. "
            "502 when the embedding model fails (hybrid and semantic modes). "
            "Entities: hybrid "
            "mode adds a third leg, the items that mention an entity (person, pet, place...) the "
            "query names or an alias of one ('my sister'). `buckets` keeps items of those "
            "knowledge buckets. `include_entities` appends `type: entity` items (the entities "
            "the query names, then those the results name; description and mention count; "
            "with `buckets`, only entities mentioned in those buckets); "
            "`include_cross_refs` adds each memory's links to other items and entities."
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
        if data.get("as_of"):
            arguments["as_of"] = data["as_of"]
        # Read your own writes: the vectors of items stored just before (deferred_embeddings).
        pending_embeddings_wait(READ_WAIT_SECONDS, user_id=request.user.id)
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
                    buckets=list(data.get("buckets") or []),
                ),
                trim=data["trim"],
                **arguments,
            )
        except ProviderError as exc:
            raise UpstreamError(
                f"The embedding model failed ({exc}); retry, or use mode=keyword.",
                code="embedding_failed",
            ) from exc
        body = self.MemorySearchOutput(result).data
        item_ids = [hit.id for hit in result.items]
        if data["include_cross_refs"]:
            links = cross_references_of_items(user_id=request.user.pk, item_ids=item_ids)
            for item in body["items"]:
                item["cross_references"] = links.get(item["id"], [])
        if data["include_entities"]:
            entities = search_entities(
                user=request.user,
                result=result,
                app_id=data["app_id"],
                buckets=list(data.get("buckets") or []),
            )
            body["items"] = [*body["items"], *SearchEntityOutput(entities, many=True).data]
        return Response(body)


class MemoryStatsApi(APIView):
    @extend_schema(
        summary="Totals of the caller's memories",
        description=(
            "`{total, by_source: {fact, chunk, summary, document}, by_project: {project_id: n}, "
            "by_topic: {topic: n}, total_entities, bucket_distribution: {bucket: n}}` (the 50 "
            "most used topics); one app's with `app_id`. Counts what the memory browser lists "
            "and the sessions pages count (retrieval items that repeat part of a turn-pair "
            "chunk, per-message items and an import's passages, are not memories of their own)."
        ),
        parameters=[OpenApiParameter("app_id", OpenApiTypes.STR, OpenApiParameter.QUERY)],
        responses={200: OpenApiTypes.OBJECT},
        tags=["memories"],
    )
    def get(self, request):
        app_id = request.query_params.get("app_id") or None
        if app_id and len(app_id) > 64:
            raise InvalidInput("app_id: at most 64 characters.", field="app_id")
        stats = memory_stats(user=request.user, app_id=app_id)
        return Response({**stats, "total_entities": entity_total(user=request.user, app_id=app_id)})
