"""The caller behind an API key: both gateway parts accept the Mnemo API token as
`Authorization: Bearer <token>` (what the `openai` SDK and MCP clients send) or `Token <token>`."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from memory_site.raw_reads import raw_first

_SCHEMES = ("bearer", "token")


def token_from_header(value: str) -> str:
    """The key of an `Authorization` header value, or "" when it is missing or malformed."""
    scheme, _, key = (value or "").strip().partition(" ")
    key = key.strip()
    if scheme.lower() not in _SCHEMES or not key or " " in key or len(key) > 128:
        return ""
    return key


def user_for_token(key: str):
    """The active user owning the API token `key`, or None."""
    if not key:
        return None
    users = get_user_model()
    user = raw_first(  # before every gateway call
        users,
        f"SELECT u.* FROM {users._meta.db_table} AS u"
        f" JOIN {Token._meta.db_table} AS t ON t.user_id = u.{users._meta.pk.column}"
        " WHERE t.key = %s",
        [key],
    )
    if user is None or not user.is_active:
        return None
    return user


class EndUserTokenAuthentication(TokenAuthentication):
    """DRF token authentication that acts for the end user a call names, when the token may
    (gateway_app.services.end_users): an app lists, searches and erases one end user's memory
    with its one key. A refused identity is a 401."""

    def authenticate_credentials(self, key):
        """DRF's lookup, with the key's end-user grant read in the same query."""
        try:
            token = Token.objects.select_related("user", "user__end_user_grant").get(key=key)
        except Token.DoesNotExist:
            raise AuthenticationFailed("Invalid token.") from None
        if not token.user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        return token.user, token

    def authenticate(self, request):
        found = super().authenticate(request)
        if found is None:
            return None
        user, token = found
        from gateway_app.services.end_users import EndUserRefused, acting_user, lower_headers

        try:
            return acting_user(user, lower_headers(request.headers.items())), token
        except EndUserRefused as exc:
            raise AuthenticationFailed(str(exc)) from None
