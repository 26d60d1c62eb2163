"""Read endpoints of the context service: the user's snapshot and a session's last pack."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from context_app.services.context_pack import session_context_last, user_context_snapshot
from memory_site.errors import InvalidInput
from sessions_app.selectors import session_get_for_user


class ContextSnapshotApi(APIView):
    @extend_schema(
        summary="The caller's context snapshot",
        description=(
            "`{app_id, recent, history, recent_updated_at, history_updated_at, opted_out, "
            "topics: [{key, title, summary, built_at, expires_at, expired}]}`: the rollups and "
            "topic summaries the context pack draws on."
        ),
        parameters=[OpenApiParameter("app_id", OpenApiTypes.STR, OpenApiParameter.QUERY)],
        responses={200: OpenApiTypes.OBJECT},
        tags=["context"],
    )
    def get(self, request):
        app_id = request.query_params.get("app_id") or "default"
        if len(app_id) > 64:
            raise InvalidInput("app_id: at most 64 characters.", field="app_id")
        return Response(user_context_snapshot(user=request.user, app_id=app_id))


class SessionContextApi(APIView):
    @extend_schema(
        summary="The last context pack of a session",
        description=(
            "The pack that went into the session's latest augmented reply: `pack` (text), "
            "`hash`, `chars`, `tokens`, `segments`, `memories` (ids and scores), `topic`, "
            "`status` (built or reused), `reason`, `prepared_at`, `built_at`, `built_reason`, "
            "message ids; `last_failure` when a later turn went out without augmentation. "
            "`pack` is null when no pack was prepared yet. Another user's session is 404."
        ),
        responses={200: OpenApiTypes.OBJECT},
        tags=["context"],
    )
    def get(self, request, session_id):
        session = session_get_for_user(user=request.user, session_id=session_id)
        return Response(session_context_last(session=session))
