"""Document ingestion endpoints (rag-pipeline.txt): text or a file in, a job out; the job
ends with the document and its chunks."""

from __future__ import annotations

import json
from collections.abc import Mapping

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion_app.chunking.documents import STRATEGIES
from ingestion_app.models import DocumentIngestJob, MemoryItem
from ingestion_app.services.document_jobs import (
    document_ingest_job_cancel,
    document_ingest_job_create,
    document_ingest_job_get_for_user,
)
from ingestion_app.services.documents import document_chunks
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


IngestJobOutput = inline_serializer(
    "DocumentIngestJobOutput",
    {
        "job_id": serializers.UUIDField(),
        "status": serializers.ChoiceField(choices=DocumentIngestJob.Status.choices),
        "progress": inline_serializer(
            "DocumentIngestProgress",
            {"chunks_done": serializers.IntegerField(), "chunks_total": serializers.IntegerField()},
        ),
        "error": inline_serializer(
            "DocumentIngestJobError",
            {"code": serializers.CharField(), "message": serializers.CharField()},
            allow_null=True,
        ),
        "status_url": serializers.CharField(),
        "created_at": serializers.DateTimeField(),
        "finished_at": serializers.DateTimeField(allow_null=True),
        "result": inline_serializer(
            "DocumentIngestResult",
            {
                "document_id": serializers.UUIDField(),
                "created": serializers.BooleanField(),
                "title": serializers.CharField(),
                "filename": serializers.CharField(),
                "mime_type": serializers.CharField(),
                "strategy": serializers.CharField(),
                "options": serializers.DictField(),
                "chunk_count": serializers.IntegerField(),
                "chunks": DocumentChunkOutput(many=True, required=False),
            },
            allow_null=True,
        ),
    },
)


class DocumentIngestApi(APIView):
    """POST /api/v1/knowledge/ingest: JSON ``{text, filename?, mime_type?, options?}`` or
    multipart with ``file`` (txt, md, json, html, pdf) and optional ``options`` (JSON); 202 with
    the job (the work runs in a task worker)."""

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
        responses={202: IngestJobOutput},
        description=(
            "Checks the request without reading the content (type, options, an empty file or "
            "blank text: 400; size: 413 over MNEMO_MAX_DOCUMENT_BYTES), stores the payload and "
            "answers 202 with a job at once; a task worker extracts the text (PDF included), "
            "redacts, chunks and embeds it. Poll `GET /knowledge/ingest/{job_id}` for progress "
            "and the result (the document and its chunks); a file that does not read as its "
            "type fails the job with error code `document_unreadable` and the reason. `DELETE` "
            "cancels it."
        ),
    )
    def post(self, request):
        data = _plain_data(request)
        serializer = self.DocumentIngestInput(data=data)
        serializer.is_valid(raise_exception=True)
        values = serializer.validated_data
        job = document_ingest_job_create(
            user=request.user,
            text=values.pop("text", None),
            upload=values.pop("file", None),
            filename=values.pop("filename", ""),
            mime_type=values.pop("mime_type", ""),
            title=values.pop("title", ""),
            options=values.pop("options", None),
            **values,
        )
        job.refresh_from_db()  # with synchronous tasks it has already run
        return Response(ingest_job_body(job), status=status.HTTP_202_ACCEPTED)


class DocumentIngestJobApi(APIView):
    """GET (progress and result) or DELETE (cancel) one document ingest job."""

    @extend_schema(
        tags=["knowledge"],
        responses={200: IngestJobOutput},
        description=(
            "The job's status and progress; once `done`, the document and its chunks under "
            "`result`. A `failed` job carries `error`: `document_unreadable` (the file does not "
            "read as its type: a broken PDF, invalid JSON, no text) or `embedding_failed`."
        ),
    )
    def get(self, request, job_id):
        job = document_ingest_job_get_for_user(user=request.user, job_id=job_id)
        return Response(ingest_job_body(job, with_chunks=True))

    @extend_schema(tags=["knowledge"], responses={200: IngestJobOutput})
    def delete(self, request, job_id):
        job = document_ingest_job_cancel(user=request.user, job_id=job_id)
        return Response(ingest_job_body(job))


def ingest_job_body(job: DocumentIngestJob, *, with_chunks: bool = False) -> dict:
    """The job as clients see it; ``result`` is the stored document once the job is done."""
    body = {
        "job_id": str(job.id),
        "status": job.status,
        "progress": {"chunks_done": job.chunks_done, "chunks_total": job.chunks_total},
        "error": {"code": job.error_code, "message": job.error} if job.error else None,
        "status_url": f"/api/v1/knowledge/ingest/{job.id}",
        "created_at": job.created_at,
        "finished_at": job.finished_at,
        "result": None,
    }
    document = job.document if job.status == DocumentIngestJob.Status.DONE else None
    if document is not None:
        result = {
            "document_id": str(document.id),
            "created": job.created_document,
            "title": document.title,
            "filename": document.filename,
            "mime_type": document.mime_type,
            "strategy": document.strategy,
            "options": document.options,
            "chunk_count": document.chunk_count,
        }
        if with_chunks:
            result["chunks"] = DocumentChunkOutput(
                document_chunks(document=document), many=True
            ).data
        body["result"] = result
    return body


def _plain_data(request) -> dict:
    """Request data as a dict; multipart ``options`` may arrive as a JSON string, and the
    reference's camelCase ``content``/``mimeType`` names are accepted too."""
    if not isinstance(request.data, Mapping):  # a JSON array, string, number or boolean
        raise InvalidInput("The request body must be a JSON object.")
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
