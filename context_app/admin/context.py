"""The context pack in admin: its settings (one row, edited live), opt-outs, topic overrides,
topic summaries and the injection log (what went into each reply, read-only)."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import admin
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from context_app.models import ContextSettings, InjectionLog, OptOut, TopicOverride, TopicSummary


@admin.register(ContextSettings)
class ContextSettingsAdmin(admin.ModelAdmin):
    """A singleton: the list page opens the one row; it cannot be added twice or deleted."""

    fieldsets = [
        ("Switches", {"fields": ["augmentation_enabled", "verbose_logging", "min_user_turns"]}),
        (
            "Caps",
            {
                "fields": [
                    "total_cap_chars",
                    "recent_cap_chars",
                    "history_cap_chars",
                    "topic_cap_chars",
                    "memories_cap_chars",
                    "max_context_share",
                    "reply_reserve_tokens",
                    "attachment_cap_chars",
                ]
            },
        ),
        (
            "Relevant memories",
            {"fields": ["memory_top_k", "memory_min_similarity", "memory_recency_half_life_days"]},
        ),
        (
            "Topics",
            {
                "fields": [
                    "topic_keyword_turns",
                    "topic_score_threshold",
                    "topic_drift_margin",
                    "topic_summary_ttl_hours",
                ]
            },
        ),
        (
            "Refresh and latency",
            {
                "fields": [
                    "refresh_every_turns",
                    "refresh_every_minutes",
                    "refresh_cooldown_seconds",
                    "latency_budget_ms",
                ]
            },
        ),
    ]
    readonly_fields = ["updated_at"]

    def changelist_view(self, request, extra_context=None):
        row = ContextSettings.load()
        return HttpResponseRedirect(
            reverse("admin:context_app_contextsettings_change", args=[row.pk])
        )

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(OptOut)
class OptOutAdmin(admin.ModelAdmin):
    list_display = ["user", "reason", "created_at"]
    search_fields = ["user__username", "reason"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    readonly_fields = ["created_at"]

    def changelist_view(self, request, extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "subtitle": "Also opted out through MNEMO_OPT_OUT_USERNAMES: "
            + (", ".join(settings.MNEMO_OPT_OUT_USERNAMES) or "nobody"),
        }
        return super().changelist_view(request, extra_context=extra_context)


@admin.register(TopicOverride)
class TopicOverrideAdmin(admin.ModelAdmin):
    list_display = ["title", "key", "user", "session", "note", "created_by", "updated_at"]
    search_fields = ["title", "key", "user__username", "session__id"]
    list_select_related = ["user", "session", "created_by"]
    raw_id_fields = ["user", "session", "created_by"]
    readonly_fields = ["created_at", "updated_at"]

    def get_changeform_initial_data(self, request):
        return {**super().get_changeform_initial_data(request), "created_by": request.user.pk}


@admin.register(TopicSummary)
class TopicSummaryAdmin(admin.ModelAdmin):
    list_display = ["title", "key", "user", "app_id", "built_at", "expires_at", "short_summary"]
    list_filter = ["app_id"]
    search_fields = ["title", "key", "summary", "user__username"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    date_hierarchy = "built_at"
    show_full_result_count = False
    actions = ["expire_now"]

    @admin.display(description="summary")
    def short_summary(self, obj: TopicSummary) -> str:
        return obj.summary[:120]

    @admin.action(description="Expire now (rebuilt on the next turn that needs it)")
    def expire_now(self, request, queryset):
        count = queryset.update(expires_at=timezone.now())
        self.message_user(request, f"Expired {count} topic summaries.")


@admin.register(InjectionLog)
class InjectionLogAdmin(admin.ModelAdmin):
    """Read-only: for any reply, exactly what was injected, from which memories, and why."""

    list_display = [
        "created_at",
        "user",
        "session",
        "turn_number",
        "status",
        "reason",
        "pack_chars",
        "pack_tokens",
        "topic_title",
        "memory_count",
        "elapsed_ms",
    ]
    list_filter = ["status", "topic_source"]
    search_fields = ["user__username", "session__id", "pack_hash", "topic_key", "reason"]
    list_select_related = ["user", "session"]
    raw_id_fields = ["user", "session", "user_message", "assistant_message"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    fields = [
        "created_at",
        "user",
        "session",
        "user_message",
        "assistant_message",
        "turn_number",
        "status",
        "reason",
        "error",
        "topic_key",
        "topic_title",
        "topic_score",
        "topic_source",
        "pack_hash",
        "pack_chars",
        "pack_tokens",
        "elapsed_ms",
        "embedding_ms",
        "skipped",
        "segments_table",
        "memories_table",
        "pack_block",
    ]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="memories")
    def memory_count(self, obj: InjectionLog) -> int:
        return len(obj.memories or [])

    @admin.display(description="segments")
    def segments_table(self, obj: InjectionLog) -> str:
        return _pre(json.dumps(obj.segments, indent=2))

    @admin.display(description="memories carried (ids, scores)")
    def memories_table(self, obj: InjectionLog) -> str:
        return _pre(json.dumps(obj.memories, indent=2))

    @admin.display(description="pack (as sent)")
    def pack_block(self, obj: InjectionLog) -> str:
        return _pre(obj.pack_text or "(empty)")


def _pre(text: str) -> str:
    return format_html('<pre style="white-space: pre-wrap; max-width: 60rem">{}</pre>', text)
