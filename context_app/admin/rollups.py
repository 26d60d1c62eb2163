"""User rollups and consolidation bookkeeping in admin: browsable, searchable, rebuildable.

Session summaries and tags are listed by sessions_app's admin; chunks and summary memories by
the rag_store admin (ingestion_app). Actions queue tasks, they never do the work in the request.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django_q.tasks import async_task

from context_app.models import SessionConsolidation, UserChatSummary
from memory_site.task_paths import USER_ROLLUPS_REBUILD_TASK


@admin.register(UserChatSummary)
class UserChatSummaryAdmin(admin.ModelAdmin):
    list_display = [
        "user",
        "app_id",
        "kind",
        "session_count",
        "short_summary",
        "period_start",
        "period_end",
        "updated_at",
    ]
    list_filter = ["kind", "app_id"]
    search_fields = ["summary", "user__username", "app_id"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    readonly_fields = ["session_count", "period_start", "period_end", "created_at", "updated_at"]
    show_full_result_count = False
    actions = ["rebuild_rollups"]

    @admin.display(description="summary")
    def short_summary(self, obj: UserChatSummary) -> str:
        return obj.summary[:120]

    @admin.action(description="Rebuild user rollups")
    def rebuild_rollups(self, request, queryset):
        pairs = set(queryset.values_list("user_id", "app_id"))
        for user_id, app_id in pairs:
            async_task(
                USER_ROLLUPS_REBUILD_TASK, user_id, app_id, task_name=f"rollups-{user_id}-{app_id}"
            )
        self.message_user(
            request, f"Queued a rollup rebuild for {len(pairs)} user/app pair(s).", messages.SUCCESS
        )


@admin.register(SessionConsolidation)
class SessionConsolidationAdmin(admin.ModelAdmin):
    list_display = [
        "session",
        "user",
        "high_water_message_id",
        "consolidations",
        "consolidated_tokens",
        "queued_at",
        "last_error",
        "updated_at",
    ]
    search_fields = ["session__id", "session__title", "user__username"]
    list_select_related = ["session", "user"]
    raw_id_fields = ["session", "user"]
    readonly_fields = ["updated_at"]
    show_full_result_count = False
