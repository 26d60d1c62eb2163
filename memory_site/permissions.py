"""API permission shared by every endpoint: a token acts for its own user, never for another.

The API has no way to act for someone else. A request that names another user in `?user=`
(the staff pages' parameter) is refused with 403 rather than answered with the caller's own
data, which would look like the other user's.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from memory_site.errors import Forbidden

OTHER_USER_MESSAGE = (
    "The API only serves your own data: `user` may name no one but you. "
    "Staff browse other users' memories in the memory browser."
)


class OwnDataOnly(BasePermission):
    """Raises Forbidden (403, code `other_user_forbidden`, field `user`) when `?user=` names
    anyone but the authenticated caller; runs after IsAuthenticated, so anonymous calls
    still get 401."""

    def has_permission(self, request, view) -> bool:
        username = (request.query_params.get("user") or "").strip()
        if username and username != request.user.get_username():
            raise Forbidden(OTHER_USER_MESSAGE, code="other_user_forbidden", field="user")
        return True
