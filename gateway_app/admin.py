"""Staff see which chat-app conversations the OpenAI-compatible endpoint matched to which
sessions (read-only: the rows are the gateway's own bookkeeping)."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from gateway_app.models import EndUser, EndUserGrant, GatewayConversation


@admin.register(GatewayConversation)
class GatewayConversationAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "short_key", "session", "stored_messages", "updated_at"]
    list_select_related = ["user", "session"]
    search_fields = ["user__username", "key", "session__id"]
    date_hierarchy = "updated_at"
    ordering = ["-updated_at"]
    fields = ["user", "key", "session", "stored_messages", "created_at", "updated_at"]
    readonly_fields = fields
    show_full_result_count = False

    @admin.display(description="key")
    def short_key(self, conversation: GatewayConversation) -> str:
        return conversation.key[:12]

    @admin.display(description="messages stored")
    def stored_messages(self, conversation: GatewayConversation) -> int:
        return len(conversation.message_hashes or [])

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class EndUserGrantForm(forms.ModelForm):
    """The JWT secret is write-only: typed in, never shown back (blank keeps the stored one)."""

    jwt_secret = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="The HS256 secret the app signs end-user JWTs with (Open WebUI's "
        "FORWARD_USER_INFO_HEADER_JWT_SECRET). Leave blank to keep the stored one.",
    )

    class Meta:
        model = EndUserGrant
        fields = ["app_user", "mode", "jwt_secret", "jwt_issuer", "user_id_header"]

    def clean_jwt_secret(self) -> str:
        return self.cleaned_data["jwt_secret"] or (
            self.instance.jwt_secret if self.instance else ""
        )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("mode") == EndUserGrant.Mode.JWT and not cleaned.get("jwt_secret"):
            self.add_error("jwt_secret", "jwt mode needs the app's signing secret.")
        return cleaned


@admin.register(EndUserGrant)
class EndUserGrantAdmin(admin.ModelAdmin):
    """Which API keys may act for the end users of their chat app."""

    form = EndUserGrantForm
    list_display = ["app_user", "mode", "jwt_issuer", "user_id_header", "created_at"]
    list_select_related = ["app_user"]
    raw_id_fields = ["app_user"]
    search_fields = ["app_user__username"]


@admin.register(EndUser)
class EndUserAdmin(admin.ModelAdmin):
    """The end users each app key has acted for, and the Mnemo user holding each one's memory."""

    list_display = ["external_id", "app_user", "user", "name", "email", "created_at"]
    list_filter = ["app_user"]
    list_select_related = ["app_user", "user"]
    search_fields = ["external_id", "email", "name", "app_user__username", "user__username"]
    fields = ["app_user", "external_id", "user", "name", "email", "created_at"]
    readonly_fields = fields
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False
