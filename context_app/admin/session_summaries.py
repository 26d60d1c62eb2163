"""Admin screens of session summaries and tags (written when a session closes)."""

from django.contrib import admin

from context_app.models import SessionSummary, SessionTag


@admin.register(SessionSummary)
class SessionSummaryAdmin(admin.ModelAdmin):
    list_display = ["session", "user", "token_estimate", "model", "created_at"]
    search_fields = ["summary", "user__username", "session__title"]
    list_select_related = ["session", "user"]
    raw_id_fields = ["session", "user"]


@admin.register(SessionTag)
class SessionTagAdmin(admin.ModelAdmin):
    list_display = ["tag", "confidence", "session", "user"]
    search_fields = ["tag", "user__username"]
    list_select_related = ["session", "user"]
    raw_id_fields = ["session", "user"]
