"""The retention log in admin: what each daily retention run deleted."""

from __future__ import annotations

from django.contrib import admin

from sessions_app.models import RetentionLog


@admin.register(RetentionLog)
class RetentionLogAdmin(admin.ModelAdmin):
    """What each daily retention run deleted; read-only (the log is the audit trail)."""

    list_display = [
        "ran_at",
        "retention_days",
        "cutoff",
        "sessions_purged",
        "messages_deleted",
        "raw_texts_cleared",
    ]
    date_hierarchy = "ran_at"
    readonly_fields = [f.name for f in RetentionLog._meta.fields]
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
