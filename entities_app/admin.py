from django.contrib import admin, messages

from entities_app.models import CrossReference, Entity, EntityMention
from entities_app.services.entity_edits import MAX_MERGE, entity_merge
from memory_site.errors import DomainError


class EntityMentionInline(admin.TabularInline):
    model = EntityMention
    fields = ["memory", "kind", "sentence", "start", "end", "created_at"]
    readonly_fields = fields
    raw_id_fields = ["memory"]
    extra = 0
    can_delete = False
    max_num = 0
    show_change_link = False


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    """Named entities per user: searchable by name, alias and user; merge several into one."""

    list_display = ["name", "type", "mention_count", "user", "app_id", "last_mentioned_at"]
    list_filter = ["type", "app_id"]
    search_fields = ["name", "normalized_name", "aliases", "description", "user__username"]
    search_help_text = "Name, alias, description or username."
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    exclude = ["embedding"]
    readonly_fields = [
        "normalized_name",
        "description_history",
        "mention_count",
        "first_mentioned_at",
        "last_mentioned_at",
        "created_at",
        "updated_at",
    ]
    show_full_result_count = False
    inlines = [EntityMentionInline]
    actions = ["merge_entities"]

    @admin.action(description="Merge the selected entities into the most mentioned one")
    def merge_entities(self, request, queryset):
        chosen = list(queryset.order_by("-mention_count", "id")[: MAX_MERGE + 1])
        if len(chosen) < 2 or len({(e.user_id, e.app_id) for e in chosen}) != 1:
            self.message_user(
                request,
                "Select two or more entities of the same user and app.",
                level=messages.ERROR,
            )
            return
        target = chosen[0]
        try:
            merged = entity_merge(
                user=target.user, target_id=target.id, source_ids=[e.id for e in chosen[1:]]
            )
        except DomainError as exc:
            self.message_user(request, exc.message, level=messages.ERROR)
            return
        self.message_user(
            request, f"Merged {len(chosen) - 1} entities into {merged.name}.", messages.SUCCESS
        )


@admin.register(CrossReference)
class CrossReferenceAdmin(admin.ModelAdmin):
    list_display = [
        "relationship",
        "source_type",
        "source_id",
        "target_type",
        "target_id",
        "strength",
        "user",
    ]
    list_filter = ["relationship", "source_type", "target_type"]
    search_fields = ["reason", "user__username"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    show_full_result_count = False
