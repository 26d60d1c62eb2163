"""Session lifecycle and message logging endpoints: thin views over sessions_app.services."""

from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.api.serializers import (
    MessageInput,
    MessageOutput,
    SessionDetailOutput,
    SessionOpenInput,
    SessionOutput,
    SessionRefInput,
    VisibilityInput,
)
from sessions_app.models import Message
from sessions_app.selectors import session_get_for_user, sessions_for_user
from sessions_app.services.messages import message_append
from sessions_app.services.sessions import (
    session_close,
    session_heartbeat,
    session_open,
    session_set_visibility,
)


def validated(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class SessionOpenApi(APIView):
    @extend_schema(request=SessionOpenInput, responses={201: SessionOutput}, tags=["sessions"])
    def post(self, request):
        data = validated(SessionOpenInput, request)
        session = session_open(user=request.user, **data)
        return Response(SessionOutput(session).data, status=status.HTTP_201_CREATED)


class SessionHeartbeatApi(APIView):
    @extend_schema(
        request=SessionRefInput,
        responses={
            200: inline_serializer(
                "HeartbeatOutput",
                {
                    "session_id": serializers.UUIDField(),
                    "last_heartbeat_at": serializers.DateTimeField(),
                },
            )
        },
        tags=["sessions"],
    )
    def post(self, request):
        data = validated(SessionRefInput, request)
        session = session_heartbeat(user=request.user, session_id=data["session_id"])
        return Response({"session_id": session.id, "last_heartbeat_at": session.last_heartbeat_at})


class SessionVisibilityApi(APIView):
    @extend_schema(
        request=VisibilityInput,
        responses={
            200: inline_serializer(
                "VisibilityOutput",
                {"session_id": serializers.UUIDField(), "visible": serializers.BooleanField()},
            )
        },
        tags=["sessions"],
    )
    def post(self, request):
        data = validated(VisibilityInput, request)
        session = session_set_visibility(
            user=request.user, session_id=data["session_id"], visible=data["visible"]
        )
        return Response({"session_id": session.id, "visible": session.visible})


class SessionCloseApi(APIView):
    @extend_schema(
        request=SessionRefInput,
        responses={
            202: inline_serializer(
                "CloseOutput",
                {
                    "session_id": serializers.UUIDField(),
                    "status": serializers.ChoiceField(choices=["open", "closing", "closed"]),
                    "close_error": serializers.CharField(),
                },
            )
        },
        tags=["sessions"],
    )
    def post(self, request):
        """Idempotent: the first call queues summarization (202); later calls report the state."""
        data = validated(SessionRefInput, request)
        session = session_close(user=request.user, session_id=data["session_id"])
        return Response(
            {
                "session_id": session.id,
                "status": session.status,
                "close_error": session.close_error,
            },
            status=status.HTTP_202_ACCEPTED,
        )


class MessageCreateApi(APIView):
    @extend_schema(request=MessageInput, responses={201: MessageOutput}, tags=["sessions"])
    def post(self, request):
        data = validated(MessageInput, request)
        message = message_append(user=request.user, **data)
        return Response(MessageOutput(message).data, status=status.HTTP_201_CREATED)


class SessionListApi(ListAPIView):
    serializer_class = SessionOutput

    @extend_schema(
        tags=["sessions"],
        parameters=[OpenApiParameter("app_id", str, description="Only sessions of this app_id.")],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return sessions_for_user(
            user=self.request.user, app_id=self.request.query_params.get("app_id")
        )


class SessionDetailApi(APIView):
    @extend_schema(responses={200: SessionDetailOutput}, tags=["sessions"])
    def get(self, request, session_id):
        session = session_get_for_user(user=request.user, session_id=session_id)
        session = (
            type(session)
            .objects.select_related("summary")
            .prefetch_related(Prefetch("messages", queryset=Message.objects.order_by("id")), "tags")
            .get(id=session.id)
        )
        return Response(SessionDetailOutput(session).data)
