"""The profile API: read the profile, add, edit and delete its entries, read an entry's history.

Every route is scoped to the caller: another user's entry is a 404, like a missing one.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_site.api_fields import StrictCharField
from profile_app.models import ProfileEntry
from profile_app.selectors import (
    profile_as_dict,
    profile_entry_get_for_user,
    profile_entry_history,
)
from profile_app.services.profile import (
    MAX_ENTRY_CHARS,
    profile_entry_add,
    profile_entry_delete,
    profile_entry_update,
    profile_patch,
)


class ProfileEntryOutput(serializers.ModelSerializer):
    class Meta:
        model = ProfileEntry
        fields = [
            "id",
            "kind",
            "text",
            "slot",
            "status",
            "origin",
            "app_id",
            "source_message_id",
            "source_memory_id",
            "source_message_ids",
            "stated_at",
            "superseded_by",
            "superseded_at",
            "created_at",
            "updated_at",
        ]


class ProfileOutput(serializers.Serializer):
    app_id = serializers.CharField()
    instructions = ProfileEntryOutput(many=True)
    preferences = ProfileEntryOutput(many=True)
    facts = ProfileEntryOutput(many=True)
    history = ProfileEntryOutput(many=True, required=False)


class EntryInput(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ProfileEntry.Kind.choices)
    text = StrictCharField(max_length=MAX_ENTRY_CHARS)


class EntryUpdateInput(serializers.Serializer):
    id = serializers.IntegerField(min_value=1)
    text = StrictCharField(max_length=MAX_ENTRY_CHARS)


class ProfilePatchInput(serializers.Serializer):
    app_id = StrictCharField(required=False, max_length=64, default=settings.MNEMO_DEFAULT_APP_ID)
    add = EntryInput(many=True, required=False, default=list)
    update = EntryUpdateInput(many=True, required=False, default=list)
    delete = serializers.ListField(
        child=serializers.IntegerField(min_value=1), required=False, default=list, max_length=100
    )

    def validate(self, data):
        if not (data["add"] or data["update"] or data["delete"]):
            raise serializers.ValidationError("Give at least one of add, update or delete.")
        return data


class ProfileQuery(serializers.Serializer):
    app_id = StrictCharField(required=False, max_length=64, default=settings.MNEMO_DEFAULT_APP_ID)
    include_history = serializers.BooleanField(required=False, default=False)


class ProfileApi(APIView):
    @extend_schema(
        tags=["profile"],
        parameters=[
            OpenApiParameter("app_id", str),
            OpenApiParameter(
                "include_history",
                bool,
                description="Also list replaced and withdrawn entries under `history`.",
            ),
        ],
        responses={200: ProfileOutput},
        description="The caller's profile in one app: standing instructions, preferences and "
        "facts about them, newest first in each; every context pack carries it first.",
    )
    def get(self, request):
        query = ProfileQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(profile_as_dict(user=request.user, **query.validated_data))

    @extend_schema(
        tags=["profile"],
        request=ProfilePatchInput,
        responses={200: ProfileOutput},
        description="Add, edit and delete entries in one transaction (all or nothing; an "
        "unknown id is a 404). An edit keeps the old text as history; a delete removes the "
        "entry and its history for real; an added entry replaces what it changes.",
    )
    def patch(self, request):
        patch = ProfilePatchInput(data=request.data)
        patch.is_valid(raise_exception=True)
        data = patch.validated_data
        profile_patch(
            user=request.user,
            app_id=data["app_id"],
            add=data["add"],
            update=data["update"],
            delete=data["delete"],
        )
        return Response(
            profile_as_dict(user=request.user, app_id=data["app_id"], include_history=False)
        )


class ProfileEntriesApi(APIView):
    class AddInput(EntryInput):
        app_id = StrictCharField(
            required=False, max_length=64, default=settings.MNEMO_DEFAULT_APP_ID
        )

    @extend_schema(tags=["profile"], request=AddInput, responses={201: ProfileEntryOutput})
    def post(self, request):
        serializer = self.AddInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        entry = profile_entry_add(user=request.user, **serializer.validated_data)
        return Response(ProfileEntryOutput(entry).data, status=status.HTTP_201_CREATED)


class ProfileEntryDetailApi(APIView):
    class TextInput(serializers.Serializer):
        text = StrictCharField(max_length=MAX_ENTRY_CHARS)

    @extend_schema(tags=["profile"], responses={200: ProfileEntryOutput})
    def get(self, request, entry_id: int):
        entry = profile_entry_get_for_user(user=request.user, entry_id=entry_id)
        return Response(ProfileEntryOutput(entry).data)

    @extend_schema(
        tags=["profile"],
        request=TextInput,
        responses={200: ProfileEntryOutput},
        description="A new version of a current entry (returned); the old text stays as its "
        "history.",
    )
    def patch(self, request, entry_id: int):
        serializer = self.TextInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        entry = profile_entry_update(
            user=request.user, entry_id=entry_id, text=serializer.validated_data["text"]
        )
        return Response(ProfileEntryOutput(entry).data)

    @extend_schema(tags=["profile"], responses={204: None}, description="Delete for real.")
    def delete(self, request, entry_id: int):
        profile_entry_delete(user=request.user, entry_id=entry_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProfileEntryHistoryApi(APIView):
    @extend_schema(
        tags=["profile"],
        responses={200: ProfileEntryOutput(many=True)},
        description="The versions the entry replaced, oldest first, then the entry.",
    )
    def get(self, request, entry_id: int):
        entry = profile_entry_get_for_user(user=request.user, entry_id=entry_id)
        return Response(ProfileEntryOutput(profile_entry_history(entry=entry), many=True).data)
