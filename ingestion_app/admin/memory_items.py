from django.contrib import admin

from ingestion_app.models import FactHistory, MemoryItem
from mnemo_text.accents import accented_words_folded


class FactHistoryInline(admin.TabularInline):
    model = FactHistory
    fields = ["event", "previous_content", "new_content", "reason", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(MemoryItem)
class MemoryItemAdmin(admin.ModelAdmin):
    """The rag_store: browsable and searchable by user, project and text, with delete."""

    list_display = [
        "id",
        "source",
        "short_content",
        "user",
        "app_id",
        "project_id",
        "chat_session",
        "created_at",
    ]
    list_filter = ["source", "app_id", ("user", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["content", "header", "user__username", "project_id", "chunk_id"]
    search_help_text = "Text of the memory, username, project id or chunk id."
    list_select_related = ["user", "chat_session"]
    raw_id_fields = ["user", "chat_session"]
    exclude = ["embedding", "raw_content"]
    readonly_fields = [
        "search_vector",
        "folded_words",
        "content_hash",
        "source_message_ids",
        "created_at",
        "updated_at",
    ]
    show_full_result_count = False
    inlines = [FactHistoryInline]

    def save_model(self, request, obj, form, change):
        obj.folded_words = accented_words_folded(obj.header, obj.content)  # what search indexes
        super().save_model(request, obj, form, change)

    @admin.display(description="content")
    def short_content(self, obj):
        return obj.content[:100]
