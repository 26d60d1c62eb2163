"""Admin for Commit to Memory: the commit log with its marks, and the project-context mapping."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms import ModelForm

from ingestion_app.models import MemoryCommitLog, ProjectContext


@admin.register(MemoryCommitLog)
class MemoryCommitLogAdmin(admin.ModelAdmin):
    """Read-only: the mark is moved by commits only (editing it would re-distill or skip
    messages); deleting a row makes the next commit start from the first message again."""

    list_display = [
        "chat_session",
        "user",
        "high_water_mark",
        "commit_count",
        "facts_committed",
        "facts_updated",
        "duplicates_skipped",
        "last_commit_at",
        "updated_at",
    ]
    search_fields = ["user__username", "chat_session__id", "chat_session__title"]
    list_filter = [("user", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["user", "chat_session"]
    raw_id_fields = ["user", "chat_session"]
    readonly_fields = [
        "chat_session",
        "user",
        "high_water_mark",
        "commit_count",
        "facts_committed",
        "facts_updated",
        "duplicates_skipped",
        "last_commit_at",
        "created_at",
        "updated_at",
    ]
    date_hierarchy = "updated_at"
    show_full_result_count = False

    def has_add_permission(self, request):
        return False


class ProjectContextForm(ModelForm):
    class Meta:
        model = ProjectContext
        fields = ["chat_session", "project_id", "note"]

    def clean_project_id(self):
        project_id = self.cleaned_data["project_id"].strip()
        if not project_id:
            raise ValidationError("A project id is required.")
        return project_id


@admin.register(ProjectContext)
class ProjectContextAdmin(admin.ModelAdmin):
    """Files a chat session's committed facts under a permanent project id."""

    form = ProjectContextForm
    list_display = ["chat_session", "user", "project_id", "note", "updated_at"]
    list_editable = ["project_id"]
    search_fields = ["project_id", "user__username", "chat_session__id", "chat_session__title"]
    list_filter = [("user", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["user", "chat_session"]
    raw_id_fields = ["chat_session"]
    readonly_fields = ["user", "created_at", "updated_at"]
    show_full_result_count = False

    def save_model(self, request, obj, form, change):
        # The mapping always belongs to the session's owner, whatever was there before.
        obj.user_id = obj.chat_session.user_id
        super().save_model(request, obj, form, change)
