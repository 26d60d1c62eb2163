"""Admin for chat-export imports: the jobs with their per-file manifest, and an upload form."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse

from imports_app.models import ImportFile, ImportJob
from imports_app.services.jobs import import_job_create


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple):
            if not data:
                return [single(None, initial)]  # raises "required"
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class ImportUploadForm(forms.Form):
    user = forms.ModelChoiceField(
        queryset=get_user_model().objects.order_by("username"),
        help_text="Owner of the imported memories.",
    )
    files = MultipleFileField(
        help_text="ChatGPT/Claude conversations.json, Gemini Takeout MyActivity, Open WebUI "
        "exports, session logs, API logs, or zip archives of them (a full export or Takeout)."
    )
    agent_id = forms.CharField(max_length=128, initial="external")
    project_id = forms.CharField(max_length=128, required=False)


class ImportFileInline(admin.TabularInline):
    model = ImportFile
    fields = list(ImportFile.REPORT_FIELDS)
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    """Import jobs (newest first) with their manifest rows; "Upload exports" starts a new one."""

    list_display = ["id", "user", "status", "origin", "files_count", "chunks", "created_at"]
    list_filter = ["status", "origin"]
    search_fields = ["user__username", "files__name"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    readonly_fields = [
        "id",
        "user",
        "status",
        "origin",
        "app_id",
        "project_id",
        "agent_id",
        "summary",
        "error",
        "attempts",
        "created_at",
        "started_at",
        "heartbeat_at",
        "finished_at",
    ]
    exclude = ["upload_dir"]
    inlines = [ImportFileInline]
    show_full_result_count = False
    change_list_template = "admin/imports/change_list.html"

    def has_add_permission(self, request):
        return False

    @admin.display(description="files")
    def files_count(self, job: ImportJob) -> int:
        return job.files.filter(is_archive=False).count()

    @admin.display(description="chunks written")
    def chunks(self, job: ImportJob) -> int:
        return (job.summary or {}).get("chunks_generated", 0)

    def get_urls(self):
        return [
            path(
                "upload/",
                self.admin_site.admin_view(self.upload_view),
                name="imports_app_importjob_upload",
            ),
            *super().get_urls(),
        ]

    def upload_view(self, request):
        if not self.has_view_or_change_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        form = ImportUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            job = import_job_create(
                user=form.cleaned_data["user"],
                uploads=form.cleaned_data["files"],
                agent_id=form.cleaned_data["agent_id"],
                project_id=form.cleaned_data["project_id"],
                origin=ImportJob.Origin.ADMIN,
            )
            self.message_user(
                request,
                f"Import {job.id} queued with {len(form.cleaned_data['files'])} file(s).",
                messages.SUCCESS,
            )
            return HttpResponseRedirect(
                reverse("admin:imports_app_importjob_change", args=[job.id])
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": "Upload chat exports",
        }
        return render(request, "admin/imports/upload.html", context)
