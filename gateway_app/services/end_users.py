"""Who a call acts for: the key's owner, or a verified end user of the chat app behind it.

A chat app reaches Mnemo with one API key for all its users. When that key holds an
`EndUserGrant`, a call naming an end user acts as that end user's own Mnemo user, created on
first sight inside the app's namespace (`EndUser`), so every read and write after
authentication (packs, search, sessions, MCP tools, the REST API) is scoped to that person
and another end user's data is a 404 like any other user's. Identities accepted, most trusted
first: Open WebUI's signed `X-OpenWebUI-User-Jwt` (HS256 with the grant's secret; signature,
`exp` and `iss` checked), then, only in "headers" mode, the grant's user-id header
(`X-OpenWebUI-User-Id`, or LibreChat's `{{LIBRECHAT_USER_ID}}` in a custom header) or OpenAI's
`user` field. A key without a grant ignores all of them: its calls are its owner's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from urllib.parse import unquote

import jwt
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from gateway_app.models import EndUser, EndUserGrant

JWT_HEADER = "x-openwebui-user-jwt"
EMAIL_HEADER = "x-openwebui-user-email"
NAME_HEADER = "x-openwebui-user-name"
MAX_EXTERNAL_ID = 255
# Open WebUI signs for five minutes; a little skew between the two clocks is tolerated.
JWT_LEEWAY_SECONDS = 30


class EndUserRefused(Exception):
    """The call names an end user in a way its key does not accept (a 401)."""


def acting_user(app_user, headers: Mapping[str, str], openai_user: object = None):
    """The user this call acts for (see the module docstring); raises EndUserRefused.

    `headers`: the request's headers with lower-case names; `openai_user`: the body's `user`
    field of an OpenAI-style call (None elsewhere)."""
    try:  # loaded with the token where the caller selected it (EndUserTokenAuthentication)
        grant = app_user.end_user_grant
    except EndUserGrant.DoesNotExist:
        return app_user
    token = headers.get(JWT_HEADER, "")
    # Open WebUI URL-encodes the name it forwards.
    email, name = headers.get(EMAIL_HEADER, ""), unquote(headers.get(NAME_HEADER, ""))
    if token:
        claims = _verified_claims(grant, token)
        external = claims.get("sub")
        email, name = claims.get("email") or email, claims.get("name") or name
    elif grant.mode == EndUserGrant.Mode.HEADERS:
        external = headers.get(grant.user_id_header.lower()) or openai_user
    else:
        if headers.get(grant.user_id_header.lower()):
            raise EndUserRefused(
                f"This key takes end users only as a signed JWT ({JWT_HEADER}); "
                f"{grant.user_id_header} alone is not accepted."
            )
        external = None
    if external is None or external == "":
        return app_user
    if not isinstance(external, str) or len(external) > MAX_EXTERNAL_ID or "\x00" in external:
        raise EndUserRefused(
            f"The end-user id must be a string of at most {MAX_EXTERNAL_ID} characters."
        )
    return _end_user(app_user, external.strip(), email=str(email)[:254], name=str(name)[:200])


def _verified_claims(grant: EndUserGrant, token: str) -> dict:
    if not grant.jwt_secret:
        raise EndUserRefused("This key has no JWT secret configured; the end-user JWT is refused.")
    try:
        return jwt.decode(
            token,
            grant.jwt_secret,
            algorithms=["HS256"],
            issuer=grant.jwt_issuer or None,
            leeway=JWT_LEEWAY_SECONDS,
            options={"require": ["exp", "sub"]},
        )
    except jwt.ExpiredSignatureError:
        raise EndUserRefused("The end-user JWT has expired.") from None
    except jwt.InvalidIssuerError:
        raise EndUserRefused("The end-user JWT has the wrong issuer.") from None
    except jwt.InvalidTokenError as exc:
        raise EndUserRefused(f"The end-user JWT is invalid: {exc}.") from None


def _end_user(app_user, external_id: str, *, email: str, name: str):
    """The Mnemo user of `external_id` among `app_user`'s end users, created on first sight."""
    found = (
        EndUser.objects.select_related("user")
        .filter(app_user=app_user, external_id=external_id)
        .first()
    )
    if found is not None:
        return found.user
    digest = hashlib.sha256(f"{app_user.pk}:{external_id}".encode()).hexdigest()[:16]
    username = f"{app_user.username[:100]}~{digest}"
    try:
        with transaction.atomic():
            # No password given: create_user stores an unusable one (no login to the pages).
            user = get_user_model().objects.create_user(username=username, email=email)
            EndUser.objects.create(
                app_user=app_user, external_id=external_id, user=user, email=email, name=name
            )
            return user
    except IntegrityError:  # a concurrent first call created it
        return (
            EndUser.objects.select_related("user")
            .get(app_user=app_user, external_id=external_id)
            .user
        )


def end_user_grant_set(
    *, app_user, mode: str, jwt_secret: str = "", user_id_header: str = ""
) -> EndUserGrant:
    """Give `app_user`'s key the right to act for its app's end users (or change it)."""
    if mode not in EndUserGrant.Mode.values:
        raise ValueError(f"mode: one of {', '.join(EndUserGrant.Mode.values)}")
    if mode == EndUserGrant.Mode.JWT and not jwt_secret:
        raise ValueError("jwt mode needs a JWT secret")
    defaults = {"mode": mode, "jwt_secret": jwt_secret}
    if user_id_header:
        defaults["user_id_header"] = user_id_header
    grant, _ = EndUserGrant.objects.update_or_create(app_user=app_user, defaults=defaults)
    return grant


def lower_headers(pairs) -> dict[str, str]:
    """Header (name, value) pairs, str or bytes, as {lower-case name: value}."""
    found = {}
    for name, value in pairs:
        if isinstance(name, bytes):
            name, value = name.decode("latin-1"), value.decode("latin-1")
        found[name.lower()] = value
    return found
