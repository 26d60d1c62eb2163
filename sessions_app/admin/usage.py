"""Admin usage & cost report: usage logs by user, model and day, with tokens and cost.

Served under the User admin (`/admin/auth/user/usage-report/`, linked from the user list; the
URL is added by privacy_app's user admin) so it needs no model of its own. Staff need permission to view usage logs.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse

from memory_site.errors import InvalidInput
from sessions_app.models import UsageLog
from sessions_app.selectors import usage_parse_bound, usage_report


def usage_report_view(request, model_admin):
    """GET filters: `since`, `until` (ISO dates, inclusive) and `username` (exact)."""
    if not request.user.has_perm(f"{UsageLog._meta.app_label}.view_{UsageLog._meta.model_name}"):
        raise PermissionDenied
    errors = []
    since = until = user = None
    try:
        since = usage_parse_bound(request.GET.get("since"), field="since")
        until = usage_parse_bound(request.GET.get("until"), field="until", end=True)
    except InvalidInput as exc:
        errors.append(exc.message)
    username = (request.GET.get("username") or "").strip()
    report = None
    if username:
        user = get_user_model()._default_manager.filter(username=username).first()
        if user is None:
            errors.append(f"No user named {username!r}.")
    if not errors:
        report = usage_report(user=user, since=since, until=until, by_user=True)
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Usage & cost report",
        "opts": model_admin.model._meta,
        "report": report,
        "errors": errors,
        "filters": {
            "since": request.GET.get("since", ""),
            "until": request.GET.get("until", ""),
            "username": username,
        },
    }
    return TemplateResponse(request, "admin/privacy/usage_report.html", context)
