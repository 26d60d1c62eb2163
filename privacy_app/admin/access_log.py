"""The access log in admin: who looked at whose data, read-only (an audit trail is not edited)."""

from __future__ import annotations

from django.contrib import admin

from privacy_app.models import AccessLog


@admin.register(AccessLog)
class AccessLogAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "viewer_username",
        "target_user",
        "object_type",
        "object_id",
        "path",
    ]
    list_filter = ["object_type", "created_at"]
    search_fields = ["viewer_username", "target_user__username", "object_id", "path"]
    date_hierarchy = "created_at"
    list_select_related = ["target_user"]
    raw_id_fields = ["viewer", "target_user"]
    show_full_result_count = False
    ordering = ["-created_at", "-id"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
