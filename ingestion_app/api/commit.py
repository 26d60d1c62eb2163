"""POST /api/v1/memory/commit: the "Commit to Memory" button."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion_app.services.commit import memory_commit
from memory_site.api_fields import FieldAliasMixin, StrictCharField, StrictUUIDField
from memory_site.errors import NotFound


class MemoryCommitApi(APIView):
    class MemoryCommitInput(FieldAliasMixin, serializers.Serializer):
        field_aliases = {"chat_session_id": "session_id"}

        session_id = StrictUUIDField(
            help_text="The chat session to commit; `chat_session_id` is accepted as an alias."
        )
        chat_session_id = StrictUUIDField(
            required=False, write_only=True, help_text="Deprecated alias of `session_id`."
        )
        rag_session_id = StrictCharField(
            required=False, allow_blank=True, allow_null=True, max_length=128, default=""
        )

    class MemoryCommitToast(serializers.Serializer):
        level = serializers.ChoiceField(choices=["info", "success", "warning", "error"])
        message = serializers.CharField()

    class MemoryCommitFact(serializers.Serializer):
        id = serializers.IntegerField()
        content = serializers.CharField()
        event = serializers.ChoiceField(choices=["ADD", "UPDATE"])
        previous_content = serializers.CharField(allow_blank=True)

    class MemoryCommitOutput(serializers.Serializer):
        session_id = serializers.UUIDField(source="chat_session_id")
        chat_session_id = serializers.UUIDField(help_text="The same as `session_id`.")
        project_id = serializers.CharField(allow_blank=True)
        messages_read = serializers.IntegerField()
        facts_committed = serializers.IntegerField()
        facts_updated = serializers.IntegerField()
        duplicates_skipped = serializers.IntegerField()
        high_water_mark = serializers.IntegerField()
        toast = serializers.SerializerMethodField()
        facts = serializers.SerializerMethodField()

        def get_toast(self, result) -> dict:
            return result.toast

        def get_facts(self, result) -> list[dict]:
            return MemoryCommitApi.MemoryCommitFact(result.facts, many=True).data

    @extend_schema(
        request=MemoryCommitInput,
        responses={200: MemoryCommitOutput},
        tags=["memories"],
        summary="Commit the session's new messages to long-term memory",
        description=(
            "Distills the messages above the session's high-water mark into atomic facts, "
            "skips duplicates, updates facts that changed, and moves the mark. Idempotent: "
            "calling again without new messages answers facts_committed 0 with a 'nothing new' "
            "toast. 404 for an unknown or another user's session; 502 when the model fails "
            "(nothing stored, mark unchanged)."
        ),
    )
    def post(self, request):
        serializer = self.MemoryCommitInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            result = memory_commit(
                user=request.user,
                chat_session_id=data["session_id"],
                rag_session_id=data.get("rag_session_id") or "",
            )
        except NotFound as exc:
            exc.field = "chat_session_id" if "chat_session_id" in request.data else "session_id"
            raise
        return Response(self.MemoryCommitOutput(result).data)
