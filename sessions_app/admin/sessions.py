from django.contrib import admin, messages
from django_q.tasks import async_task

from memory_site.task_paths import SESSION_RESUMMARIZE_TASK, USER_ROLLUPS_REBUILD_TASK
from sessions_app.models import ChatSession, Message, UsageLog


class MessageInline(admin.TabularInline):
    model = Message
    fields = ["id", "role", "content_sanitized", "token_count", "model", "incomplete", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "title",
        "user",
        "app_id",
        "status",
        "visible",
        "opened_at",
        "last_activity_at",
        "closed_at",
    ]
    list_filter = ["status", "app_id", "visible"]
    search_fields = ["id", "title", "user__username", "project_id", "agent_id"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    readonly_fields = [
        "id",
        "opened_at",
        "closed_at",
        "close_error",
        "close_attempts",
        "messages_purged_at",
    ]
    date_hierarchy = "opened_at"
    inlines = [MessageInline]
    actions = ["resummarize_sessions", "rebuild_user_rollups"]

    # The work lives in context_app (a higher layer): queue it by dotted path.
    @admin.action(description="Re-summarize session")
    def resummarize_sessions(self, request, queryset):
        ids = [str(session_id) for session_id in queryset.values_list("id", flat=True)]
        for session_id in ids:
            async_task(SESSION_RESUMMARIZE_TASK, session_id)
        self.message_user(
            request, f"Queued re-summarizing of {len(ids)} session(s).", messages.SUCCESS
        )

    @admin.action(description="Rebuild user rollups")
    def rebuild_user_rollups(self, request, queryset):
        pairs = set(queryset.values_list("user_id", "app_id"))
        for user_id, app_id in pairs:
            async_task(USER_ROLLUPS_REBUILD_TASK, user_id, app_id)
        self.message_user(
            request, f"Queued rollup rebuilds for {len(pairs)} user/app pair(s).", messages.SUCCESS
        )


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "session",
        "user",
        "role",
        "token_count",
        "model",
        "incomplete",
        "created_at",
    ]
    list_filter = ["role", "incomplete"]
    search_fields = ["content_sanitized", "user__username", "session__id"]
    list_select_related = ["session", "user"]
    raw_id_fields = ["session", "user"]
    # The original (encrypted) content is not shown in admin: the redacted copy is enough to operate.
    exclude = ["content"]
    show_full_result_count = False


@admin.register(UsageLog)
class UsageLogAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "user",
        "kind",
        "model",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "session",
    ]
    list_filter = ["kind", "model"]
    search_fields = ["user__username", "model"]
    list_select_related = ["user", "session"]
    raw_id_fields = ["user", "session"]
    date_hierarchy = "created_at"
    show_full_result_count = False
