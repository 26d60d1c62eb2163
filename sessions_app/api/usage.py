"""The caller's token usage and cost. Thin view over the usage selectors."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_site.errors import InvalidInput
from sessions_app.selectors import usage_parse_bound, usage_report


class UsageApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "since", OpenApiTypes.STR, description="ISO date or datetime (inclusive)"
            ),
            OpenApiParameter(
                "until", OpenApiTypes.STR, description="ISO date (inclusive) or datetime"
            ),
        ],
        responses={200: OpenApiTypes.OBJECT},
        tags=["privacy"],
    )
    def get(self, request):
        """The caller's token usage and cost: totals, per model, and per day and model."""
        since = usage_parse_bound(request.query_params.get("since"), field="since")
        until = usage_parse_bound(request.query_params.get("until"), field="until", end=True)
        if since and until and until <= since:
            raise InvalidInput("until must be after since.", code="invalid_range", field="until")
        return Response(usage_report(user=request.user, since=since, until=until))
