"""The webhooks API: register endpoints, change them, read their deliveries.

The secret is returned by the create and rotate calls only. Every route is scoped to the
caller: another user's endpoint is a 404, like a missing one.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_site.api_fields import StrictCharField
from webhooks_app.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks_app.selectors import deliveries_of, endpoint_get_for_user, endpoints_for_user
from webhooks_app.services.endpoints import (
    endpoint_create,
    endpoint_delete,
    endpoint_secret_rotate,
    endpoint_update,
)
from webhooks_app.services.events import EVENT_TYPES


class EndpointOutput(serializers.ModelSerializer):
    class Meta:
        model = WebhookEndpoint
        fields = [
            "id",
            "url",
            "description",
            "events",
            "enabled",
            "disabled_reason",
            "disabled_at",
            "created_at",
            "updated_at",
        ]


class EndpointWithSecretOutput(EndpointOutput):
    secret = serializers.CharField(
        help_text="The signing secret: shown now only; keep it with the receiver."
    )

    class Meta(EndpointOutput.Meta):
        fields = [*EndpointOutput.Meta.fields, "secret"]


class AttemptOutput(serializers.ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = ["attempted_at", "status_code", "latency_ms", "response_snippet", "error"]


class DeliveryOutput(serializers.ModelSerializer):
    webhook_id = serializers.CharField(source="message_id")
    attempt_log = AttemptOutput(many=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "webhook_id",
            "event",
            "status",
            "attempts",
            "last_status_code",
            "next_attempt_at",
            "created_at",
            "delivered_at",
            "attempt_log",
        ]


class Events(serializers.ListField):
    child = serializers.ChoiceField(choices=EVENT_TYPES)


class WebhookListApi(APIView):
    class CreateInput(serializers.Serializer):
        url = StrictCharField(max_length=2000)
        events = Events(required=False, default=list, max_length=len(EVENT_TYPES))
        description = StrictCharField(required=False, allow_blank=True, max_length=200, default="")

    @extend_schema(tags=["webhooks"], responses={200: EndpointOutput(many=True)})
    def get(self, request):
        return Response(EndpointOutput(endpoints_for_user(user=request.user), many=True).data)

    @extend_schema(
        tags=["webhooks"],
        request=CreateInput,
        responses={201: EndpointWithSecretOutput},
        description="Register an endpoint for `events` (empty: all of "
        + ", ".join(EVENT_TYPES)
        + "). The answer holds the signing secret, shown this once.",
    )
    def post(self, request):
        serializer = self.CreateInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        endpoint = endpoint_create(user=request.user, **serializer.validated_data)
        return Response(EndpointWithSecretOutput(endpoint).data, status=status.HTTP_201_CREATED)


class WebhookDetailApi(APIView):
    class UpdateInput(serializers.Serializer):
        url = StrictCharField(required=False, max_length=2000)
        events = Events(required=False, max_length=len(EVENT_TYPES))
        description = StrictCharField(required=False, allow_blank=True, max_length=200)
        enabled = serializers.BooleanField(required=False)

    @extend_schema(tags=["webhooks"], responses={200: EndpointOutput})
    def get(self, request, endpoint_id):
        endpoint = endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id)
        return Response(EndpointOutput(endpoint).data)

    @extend_schema(
        tags=["webhooks"],
        request=UpdateInput,
        responses={200: EndpointOutput},
        description="Change the endpoint; `enabled: true` turns a disabled one back on.",
    )
    def patch(self, request, endpoint_id):
        serializer = self.UpdateInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        endpoint = endpoint_update(
            user=request.user, endpoint_id=endpoint_id, **serializer.validated_data
        )
        return Response(EndpointOutput(endpoint).data)

    @extend_schema(tags=["webhooks"], responses={204: None})
    def delete(self, request, endpoint_id):
        endpoint_delete(user=request.user, endpoint_id=endpoint_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookSecretApi(APIView):
    @extend_schema(
        tags=["webhooks"],
        request=None,
        responses={200: EndpointWithSecretOutput},
        description="A new signing secret (shown this once); the old one stops at once.",
    )
    def post(self, request, endpoint_id):
        endpoint = endpoint_secret_rotate(user=request.user, endpoint_id=endpoint_id)
        return Response(EndpointWithSecretOutput(endpoint).data)


class WebhookDeliveriesApi(APIView):
    @extend_schema(
        tags=["webhooks"],
        responses={200: DeliveryOutput(many=True)},
        description="The latest 100 deliveries, newest first, each with every attempt "
        "(status, latency, the start of the answer).",
    )
    def get(self, request, endpoint_id):
        endpoint = endpoint_get_for_user(user=request.user, endpoint_id=endpoint_id)
        return Response(DeliveryOutput(deliveries_of(endpoint=endpoint), many=True).data)
