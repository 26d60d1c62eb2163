"""Context settings for staff: the same records the admin edits (ContextSettings, OptOut,
TopicOverride), with the model's validation messages. Viewing needs staff status; each change
needs the matching model permission, as in the admin."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods, require_POST

from context_app.forms import ContextSettingsForm, OptOutForm, TopicOverrideForm
from context_app.selectors import context_settings_row, opt_outs_listed, topic_overrides_listed
from context_app.services.context_settings import opt_out_delete, topic_override_delete
from memory_site.errors import NotFound


def staff_required(view):
    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_staff:
            raise PermissionDenied("Settings are for staff only.")
        return view(request, *args, **kwargs)

    return wrapper


def _require(request, permission: str) -> None:
    if not request.user.has_perm(f"context_app.{permission}"):
        raise PermissionDenied("You do not have permission to change this.")


# The two small forms share field names (username) on one page: prefixes keep ids unique.
OPT_OUT_PREFIX = "opt_out"
OVERRIDE_PREFIX = "override"

ADMIN_SCREENS = [
    ("context settings", "admin:context_app_contextsettings_changelist"),
    ("opt-outs", "admin:context_app_optout_changelist"),
    ("topic overrides", "admin:context_app_topicoverride_changelist"),
    ("access log", "admin:privacy_app_accesslog_changelist"),
]


def _admin_links() -> list[tuple[str, str]]:
    """Admin screens of the same records, for those registered."""
    links = []
    for label, name in ADMIN_SCREENS:
        try:
            links.append((label, reverse(name)))
        except NoReverseMatch:
            continue
    return links


def _render(request, *, settings_form=None, opt_out_form=None, override_form=None, status=200):
    context_settings = context_settings_row()
    user = request.user
    return render(
        request,
        "settings/settings.html",
        {
            "nav": "settings",
            "context_settings": context_settings,
            "settings_form": settings_form or ContextSettingsForm(instance=context_settings),
            "opt_out_form": opt_out_form or OptOutForm(prefix=OPT_OUT_PREFIX),
            "override_form": override_form or TopicOverrideForm(prefix=OVERRIDE_PREFIX),
            "opt_outs": opt_outs_listed(),
            "configured_opt_outs": settings.MNEMO_OPT_OUT_USERNAMES,
            "overrides": topic_overrides_listed(),
            "admin_links": _admin_links(),
            "can_change_settings": user.has_perm("context_app.change_contextsettings"),
            "can_add_opt_out": user.has_perm("context_app.add_optout"),
            "can_delete_opt_out": user.has_perm("context_app.delete_optout"),
            "can_add_override": user.has_perm("context_app.add_topicoverride"),
            "can_delete_override": user.has_perm("context_app.delete_topicoverride"),
        },
        status=status,
    )


@staff_required
@require_http_methods(["GET", "POST"])
def settings_page(request):
    if request.method == "GET":
        return _render(request)
    _require(request, "change_contextsettings")
    form = ContextSettingsForm(request.POST, instance=context_settings_row())
    if form.is_valid():
        form.save()
        messages.success(request, "Settings saved. They apply from the next chat turn.")
        return redirect("web:settings")
    messages.error(request, "Settings not saved: fix the fields marked below.")
    return _render(request, settings_form=form, status=400)


@staff_required
@require_POST
def opt_out_add(request):
    _require(request, "add_optout")
    form = OptOutForm(request.POST, prefix=OPT_OUT_PREFIX)
    if form.is_valid():
        opt_out = form.save()
        messages.success(request, f"{opt_out.user.get_username()} is opted out of stored context.")
        return redirect("web:settings")
    return _render(request, opt_out_form=form, status=400)


@staff_required
@require_POST
def opt_out_remove(request, opt_out_id: int):
    _require(request, "delete_optout")
    try:
        opt_out = opt_out_delete(opt_out_id=opt_out_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    messages.success(request, f"{opt_out.user.get_username()} gets stored context again.")
    return redirect("web:settings")


@staff_required
@require_POST
def override_add(request):
    _require(request, "add_topicoverride")
    form = TopicOverrideForm(request.POST, prefix=OVERRIDE_PREFIX, created_by=request.user)
    if form.is_valid():
        override = form.save()
        messages.success(request, f"Topic override “{override.title}” saved.")
        return redirect("web:settings")
    return _render(request, override_form=form, status=400)


@staff_required
@require_POST
def override_remove(request, override_id: int):
    _require(request, "delete_topicoverride")
    try:
        override = topic_override_delete(override_id=override_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    messages.success(request, f"Topic override “{override.title}” removed.")
    return redirect("web:settings")
