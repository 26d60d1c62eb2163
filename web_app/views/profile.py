"""The profile page of the memory browser: the user's standing instructions, preferences and
facts, with the history of each; the owner adds and deletes entries here (staff only read)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memory_site.errors import NotFound
from privacy_app.selectors import browse_target
from privacy_app.services.access_log import access_log_record
from profile_app.selectors import (
    KIND_GROUPS,
    PROFILE_KIND_CHOICES,
    profile_entries,
    profile_entry_is_active,
)
from profile_app.services.profile import (
    MAX_ENTRY_CHARS,
    profile_entry_add,
    profile_entry_delete,
)
from web_app.views.memories import viewing_context


@login_required
def profile_page(request):
    target = browse_target(request)
    entries = list(
        profile_entries(user=target, app_id=settings.MNEMO_DEFAULT_APP_ID, include_history=True)
    )
    groups = [
        {
            "kind": kind,
            "title": group.capitalize(),
            "entries": [e for e in entries if e.kind == kind and profile_entry_is_active(e)],
        }
        for kind, group in KIND_GROUPS.items()
    ]
    history = [e for e in entries if not profile_entry_is_active(e)]
    access_log_record(request=request, target_user=target, object_type="profile")
    return render(
        request,
        "memories/profile.html",
        {
            "nav": "memories",
            "subnav": "profile",
            "groups": groups,
            "history": history,
            "kinds": PROFILE_KIND_CHOICES,
            "max_chars": MAX_ENTRY_CHARS,
            **viewing_context(request, target),
        },
    )


@login_required
@require_POST
def profile_entry_add_view(request):
    kind = request.POST.get("kind", "")
    text = " ".join((request.POST.get("text") or "").split())
    if kind not in dict(PROFILE_KIND_CHOICES) or not text or len(text) > MAX_ENTRY_CHARS:
        messages.error(
            request, f"Choose a kind and write the entry (1 to {MAX_ENTRY_CHARS} characters)."
        )
    else:
        profile_entry_add(
            user=request.user, app_id=settings.MNEMO_DEFAULT_APP_ID, kind=kind, text=text
        )
        messages.success(request, "Added to your profile.")
    return redirect(reverse("web:profile"))


@login_required
@require_POST
def profile_entry_delete_view(request, entry_id: int):
    try:
        profile_entry_delete(user=request.user, entry_id=entry_id)
    except NotFound:
        messages.error(request, f"No profile entry {entry_id}.")
    else:
        messages.success(request, "Deleted from your profile.")
    return redirect(reverse("web:profile"))
