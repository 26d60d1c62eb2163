"""Staff see which chat-app conversations the OpenAI-compatible endpoint matched to which
sessions (read-only: the rows are the gateway's own bookkeeping)."""

from __future__ import annotations

from django.contrib import admin

from gateway_app.models import GatewayConversation


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
