"""Imports in the memory browser: upload chat exports, watch progress, read the summary."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from imports_app.services.jobs import import_job_create
from imports_app.services.verification import import_summary_lines
from memory_site.errors import DomainError
from privacy_app.selectors import browse_target
from privacy_app.services.access_log import access_log_record
from web_app.forms import ImportUploadForm
from web_app.selectors import (
    import_job_files,
    import_job_for_viewer,
    import_job_progress,
    import_jobs_for_user,
)
from web_app.views.memories import viewing_context

PAGE_SIZE = 20


@login_required
@require_http_methods(["GET", "POST"])
def import_list(request):
    """GET lists the imports; POST uploads files into a new import of the caller's own."""
    target = browse_target(request)
    form = ImportUploadForm()
    status = 200
    if request.method == "POST":
        target = request.user
        form = ImportUploadForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                job = import_job_create(
                    user=request.user,
                    uploads=form.cleaned_data["files"],
                    project_id=form.cleaned_data["project_id"].strip(),
                )
            except DomainError as exc:  # no file, or an archive over a cap or unsafe
                form.add_error("files" if exc.field == "files" else None, exc.message)
                status = exc.status_code
            else:
                count = len(form.cleaned_data["files"])
                messages.success(
                    request, f"Import started: {count} file{'s' if count != 1 else ''} uploaded."
                )
                return redirect("web:import-detail", import_id=job.id)
        status = status if status != 200 else 400
    page_obj = Paginator(import_jobs_for_user(user=target), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    access_log_record(request=request, target_user=target, object_type="import_list")
    return render(
        request,
        "memories/imports.html",
        {
            "nav": "memories",
            "subnav": "imports",
            "form": form,
            "page_obj": page_obj,
            **viewing_context(request, target),
        },
        status=status,
    )


@login_required
def import_detail(request, import_id):
    """One import: per-file progress while it runs (htmx polls the status partial), then the
    processing summary."""
    browse_target(request)  # `?user=` naming someone else: 403 unless browsing staff
    job = import_job_for_viewer(viewer=request.user, import_id=import_id)
    access_log_record(request=request, target_user=job.user, object_type="import", object_id=job.id)
    files = import_job_files(job=job)
    done, running = import_job_progress(job=job, files=files)
    context = {
        "nav": "memories",
        "subnav": "imports",
        "job": job,
        "files": files,
        "files_done": done,
        "running": running,
        "summary": job.summary or {},
        "summary_text": "\n".join(import_summary_lines(job.summary)) if job.summary else "",
        "is_owner": job.user_id == request.user.pk,
    }
    if request.headers.get("HX-Request"):
        return render(request, "memories/_import_status.html", context)
    return render(request, "memories/import_detail.html", context)
