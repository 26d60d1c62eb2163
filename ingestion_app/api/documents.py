"""Document ingestion endpoint (rag-pipeline.txt): text or a file in, chunks out."""

from __future__ import annotations

import json

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion_app.chunking.documents import STRATEGIES
from ingestion_app.models import MemoryItem
from ingestion_app.services.documents import document_chunks, document_ingest
from memory_site.api_fields import JSONObjectField, StrictCharField
from memory_site.errors import InvalidInput
from memory_site.parsers import GuardedFormParser, GuardedJSONParser, GuardedMultiPartParser


class DocumentChunkOutput(serializers.ModelSerializer):
    index = serializers.SerializerMethodField()
    start_offset = serializers.SerializerMethodField()
    end_offset = serializers.SerializerMethodField()
    strategy = serializers.SerializerMethodField()

    class Meta:
        model = MemoryItem
        fields = [
            "id",
            "chunk_id",
            "index",
            "content",
            "start_offset",
            "end_offset",
            "strategy",
            "token_count",
            "metadata",
        ]

    def get_index(self, item: MemoryItem) -> int:
        return item.metadata.get("chunk_index", 0)

    def get_start_offset(self, item: MemoryItem) -> int:
        return item.metadata.get("start_offset", 0)

    def get_end_offset(self, item: MemoryItem) -> int:
        return item.metadata.get("end_offset", 0)

    def get_strategy(self, item: MemoryItem) -> str:
        return item.metadata.get("strategy", "")


INGEST_OUTPUT = inline_serializer(
    "DocumentIngestOutput",
    {
        "document_id": serializers.UUIDField(),
        "created": serializers.BooleanField(),
        "title": serializers.CharField(),
        "filename": serializers.CharField(),
        "mime_type": serializers.CharField(),
        "strategy": serializers.CharField(),
        "options": serializers.DictField(),
        "chunk_count": serializers.IntegerField(),
        "chunks": DocumentChunkOutput(many=True),
    },
)


class DocumentIngestApi(APIView):
    """POST /api/v1/knowledge/ingest: JSON ``{text, filename?, mime_type?, options?}`` or
    multipart with ``file`` (txt, md, json, html, pdf) and optional ``options`` (JSON)."""

    parser_classes = [GuardedJSONParser, GuardedMultiPartParser, GuardedFormParser]

    class DocumentIngestInput(serializers.Serializer):
        text = StrictCharField(required=False, trim_whitespace=False, allow_blank=True)
        file = serializers.FileField(required=False)
        filename = StrictCharField(required=False, allow_blank=True, max_length=500)
        mime_type = StrictCharField(required=False, allow_blank=True, max_length=100)
        title = StrictCharField(required=False, allow_blank=True, max_length=500)
        options = JSONObjectField(required=False)
        app_id = StrictCharField(required=False, max_length=64)
        project_id = StrictCharField(required=False, allow_blank=True, max_length=128)
        agent_id = StrictCharField(required=False, allow_blank=True, max_length=128)

        def validate(self, attrs):
            if ("text" in attrs) == ("file" in attrs):
                raise serializers.ValidationError({"text": "Send either 'text' or a 'file'."})
            strategy = (attrs.get("options") or {}).get("strategy")
            if strategy is not None and strategy not in STRATEGIES:
                raise serializers.ValidationError(
                    {"options": f"strategy must be one of {', '.join(STRATEGIES)}"}
                )
            return attrs

    @extend_schema(
        tags=["knowledge"],
        request=DocumentIngestInput,
        responses={201: INGEST_OUTPUT, 200: INGEST_OUTPUT},
        description="201 with the new document; 200 when the same text with the same options was "
        "ingested before (re-ingest: the stored document is answered, nothing is added).",
    )
    def post(self, request):
        data = _plain_data(request)
        serializer = self.DocumentIngestInput(data=data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        upload = values.pop("file", None)
        payload = None
        filename = values.pop("filename", "")
        if upload is not None:
            payload = b"".join(upload.chunks())
            filename = filename or upload.name or ""
            values.setdefault("mime_type", upload.content_type or "")
        document, created = document_ingest(
            user=request.user,
            text=values.pop("text", None),
            data=payload,
            filename=filename,
            mime_type=values.pop("mime_type", ""),
            title=values.pop("title", ""),
            options=values.pop("options", None),
            **values,
        )
        chunks = document_chunks(document=document)
        body = {
            "document_id": str(document.id),
            "created": created,
            "title": document.title,
            "filename": document.filename,
            "mime_type": document.mime_type,
            "strategy": document.strategy,
            "options": document.options,
            "chunk_count": len(chunks),
            "chunks": DocumentChunkOutput(chunks, many=True).data,
        }
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def _plain_data(request) -> dict:
    """Request data as a dict; multipart ``options`` may arrive as a JSON string, and the
    reference's camelCase ``content``/``mimeType`` names are accepted too."""
    data = {key: request.data.get(key) for key in request.data}
    if "file" in request.FILES:
        data["file"] = request.FILES["file"]
    if "content" in data and "text" not in data:
        data["text"] = data.pop("content")
    if "mimeType" in data and "mime_type" not in data:
        data["mime_type"] = data.pop("mimeType")
    options = data.get("options")
    if isinstance(options, str):
        try:
            data["options"] = json.loads(options) if options.strip() else {}
        except ValueError as exc:
            raise InvalidInput("options must be a JSON object.", field="options") from exc
    return {key: value for key, value in data.items() if value is not None}
