"""The caller's own data: export and erasure. Thin views over privacy_app.services.user_data."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_site.errors import InvalidInput
from privacy_app.services.user_data import erasure_check_confirmation, user_erase, user_export


class MeExportApi(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, tags=["privacy"])
    def get(self, request):
        """Everything the caller owns as one JSON document (original message text included)."""
        document = user_export(user=request.user)
        response = Response(document)
        filename = f"mnemo-export-{request.user.pk}.json"
        response["Content-Disposition"] = f'inline; filename="{filename}"'
        response["Cache-Control"] = "no-store"
        return response


class MeEraseApi(APIView):
    class MeEraseInput(serializers.Serializer):
        confirm = serializers.JSONField(required=False, help_text="Your username, to confirm.")

    class MeEraseOutput(serializers.Serializer):
        erased = serializers.BooleanField()
        user_id = serializers.IntegerField()
        rows_deleted = serializers.IntegerField()
        deleted = serializers.DictField(child=serializers.IntegerField())
        files_deleted = serializers.IntegerField()

    @extend_schema(request=MeEraseInput, responses={200: MeEraseOutput}, tags=["privacy"])
    def delete(self, request):
        """Erase the caller's account and all their data. Cannot be undone.

        Body `{"confirm": "<username>"}`; missing or wrong -> 400 naming `confirm`.
        """
        if not isinstance(request.data, dict):
            raise InvalidInput("Expected a JSON object with `confirm`.", field="confirm")
        erasure_check_confirmation(user=request.user, confirm=request.data.get("confirm"))
        report = user_erase(user=request.user)
        return Response(
            self.MeEraseOutput(
                {
                    "erased": True,
                    "user_id": report.user_id,
                    "rows_deleted": report.rows_deleted,
                    "deleted": report.deleted,
                    "files_deleted": report.files_deleted,
                }
            ).data
        )
