"""Admin for ingested documents: read-only rows, added through the API or the pages."""

from __future__ import annotations

from django.contrib import admin

from ingestion_app.models import Document


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "user", "mime_type", "strategy", "chunk_count", "created_at"]
    list_filter = ["mime_type", "strategy"]
    search_fields = ["title", "filename", "user__username"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    readonly_fields = [
        "id",
        "user",
        "title",
        "filename",
        "mime_type",
        "content_hash",
        "text_length",
        "strategy",
        "options",
        "chunk_count",
        "created_at",
    ]
    show_full_result_count = False

    def has_add_permission(self, request):
        return False
