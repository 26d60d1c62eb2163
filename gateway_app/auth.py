"""The caller behind an API key: both gateway parts accept the Mnemo API token as
`Authorization: Bearer <token>` (what the `openai` SDK and MCP clients send) or `Token <token>`."""

from __future__ import annotations

from rest_framework.authtoken.models import Token

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
    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return None
    return token.user
