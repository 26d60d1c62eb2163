"""Whose data a page may show (the access log records every look at someone else's).

Users see only their own memories, sessions and imports. Staff holding
`privacy_app.browse_all_memories` may pick another user (`?user=<username>`) or open another
user's object by id; each such page view writes one `AccessLog` row
(`privacy_app.services.access_log`). Anyone else naming another user in `?user=` gets a
403 page (never their own data under someone else's name); anyone else opening another
user's object by id gets the same 404 as for data that does not exist.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import Http404

OTHER_USER_PAGE_MESSAGE = (
    "Only staff with the browse permission can look at another user's data; "
    "remove ?user= from the address to see your own."
)

BROWSE_ALL_PERMISSION = "privacy_app.browse_all_memories"


def can_browse_all(user) -> bool:
    """Staff with the browse permission (superusers have every permission)."""
    return bool(user.is_authenticated and user.is_active and user.is_staff) and user.has_perm(
        BROWSE_ALL_PERMISSION
    )


def refuse_other_user(request) -> None:
    """For pages that show only the caller's own data: raises PermissionDenied (403 page) when
    `?user=` names someone else, so the page never passes the caller's data off as theirs."""
    username = (request.GET.get("user") or "").strip()
    if username and username != request.user.get_username():
        raise PermissionDenied(OTHER_USER_PAGE_MESSAGE)


def browse_target(request):
    """The user whose data a list page shows: the caller, or `?user=<username>` for staff with
    the browse permission. Raises PermissionDenied (403) for a caller without it, whatever the
    name, and Http404 for an unknown username asked for by staff."""
    username = (request.GET.get("user") or "").strip()
    if not username or username == request.user.get_username():
        return request.user
    if not can_browse_all(request.user):
        raise PermissionDenied(OTHER_USER_PAGE_MESSAGE)
    target = get_user_model().objects.filter(username=username).first()
    if target is None:
        raise Http404("No such user.")
    return target
