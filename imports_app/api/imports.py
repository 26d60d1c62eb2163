"""Chat-export import endpoints: upload (202, processed by a task) and status."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from imports_app.models import ImportFile, ImportJob
from imports_app.services.jobs import import_job_create, import_job_get_for_user
from memory_site.api_fields import StrictCharField
from memory_site.parsers import GuardedFormParser, GuardedMultiPartParser


class ImportFileOutput(serializers.ModelSerializer):
    class Meta:
        model = ImportFile
        fields = list(ImportFile.REPORT_FIELDS)


class ImportJobOutput(serializers.ModelSerializer):
    import_id = serializers.UUIDField(source="id", read_only=True)
    files = serializers.SerializerMethodField()

    class Meta:
        model = ImportJob
        fields = [
            "import_id",
            "status",
            "files",
            "summary",
            "error",
            "app_id",
            "project_id",
            "agent_id",
            "created_at",
            "started_at",
            "finished_at",
        ]

    @extend_schema_field(ImportFileOutput(many=True))
    def get_files(self, job: ImportJob) -> list[dict]:
        # Archive containers are not files of their own; their members are listed instead,
        # unless the archive itself could not be opened.
        rows = [
            f
            for f in job.files.all()
            if not f.is_archive or f.status in (ImportFile.Status.FAILED, ImportFile.Status.SKIPPED)
        ]
        return ImportFileOutput(rows, many=True).data


class ImportCreateApi(APIView):
    """POST /api/v1/imports: multipart, field ``files`` repeated (exports or zip archives)."""

    parser_classes = [GuardedMultiPartParser, GuardedFormParser]

    class ImportUploadInput(serializers.Serializer):
        files = serializers.ListField(child=serializers.FileField(), allow_empty=False)
        app_id = StrictCharField(required=False, max_length=64)
        project_id = StrictCharField(required=False, allow_blank=True, max_length=128)
        agent_id = StrictCharField(required=False, max_length=128)

    @extend_schema(
        tags=["imports"],
        request={
            "multipart/form-data": inline_serializer(
                "ImportUpload",
                {
                    "files": serializers.ListField(child=serializers.FileField()),
                    "app_id": serializers.CharField(required=False),
                    "project_id": serializers.CharField(required=False),
                    "agent_id": serializers.CharField(required=False),
                },
            )
        },
        responses={202: ImportJobOutput},
    )
    def post(self, request):
        data = {key: request.data.get(key) for key in ("app_id", "project_id", "agent_id")}
        data = {key: value for key, value in data.items() if value is not None}
        data["files"] = request.FILES.getlist("files")
        serializer = self.ImportUploadInput(data=data)
        serializer.is_valid(raise_exception=True)
        job = import_job_create(
            user=request.user,
            uploads=serializer.validated_data.pop("files"),
            **serializer.validated_data,
        )
        job = import_job_get_for_user(user=request.user, import_id=job.id)
        return Response(ImportJobOutput(job).data, status=status.HTTP_202_ACCEPTED)


class ImportDetailApi(APIView):
    """GET /api/v1/imports/<id>: job status, per-file outcome and the processing summary."""

    @extend_schema(tags=["imports"], responses={200: ImportJobOutput})
    def get(self, request, import_id):
        job = import_job_get_for_user(user=request.user, import_id=import_id)
        return Response(ImportJobOutput(job).data)
