"""Request guards that must run before any view parses a body."""

from __future__ import annotations

from django.conf import settings

from memory_site.errors import error_response
from memory_site.parsers import is_unstorable


def body_limit_for(path: str) -> int:
    """Upload endpoints (imports, document ingest) get MNEMO_MAX_UPLOAD_BYTES, the rest MNEMO_MAX_BODY_BYTES."""
    if any(path.startswith(prefix) for prefix in settings.MNEMO_UPLOAD_PATHS):
        return settings.MNEMO_MAX_UPLOAD_BYTES
    return settings.MNEMO_MAX_BODY_BYTES


class BodySizeLimitMiddleware:
    """Answer 413 for a declared Content-Length over the limit (WSGI and the test client).

    Under ASGI, `memory_site.asgi.BodyLimitASGI` enforces the same limit earlier, while the body
    is still arriving, and also for chunked bodies that declare no length.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_response(400, "invalid_content_length", "Content-Length is not a number.")
        limit = body_limit_for(request.path)
        if length > limit:
            return error_response(
                413,
                "payload_too_large",
                f"Request body of {length} bytes is over the {limit}-byte limit.",
            )
        return self.get_response(request)


# Query parameters each API read accepts, by URL name; any other is a 400 naming it, so a
# misspelt filter never silently widens a listing. tests/memory_site/test_request_guards.py
# checks this table against the OpenAPI schema.
PAGINATION = ("page", "page_size")
QUERY_PARAMETERS: dict[str, tuple[str, ...]] = {
    "chat-sessions": ("app_id", *PAGINATION),
    "memories": (
        "project_id",
        "source",
        "role",
        "session_id",
        "chat_session_id",
        "app_id",
        "q",
        "include_message_items",
        *PAGINATION,
    ),
    "memory-stats": ("app_id",),
    "entities": ("type", "bucket", "q", "app_id", *PAGINATION),
    "summaries-context": ("app_id",),
    "usage": ("since", "until"),
    "profile": ("app_id", "include_history"),
}
# Pages outside the versioned API take their own parameters (the schema's ?format=, ?lang=).
UNCHECKED_QUERY_URL_NAMES = {"schema", "api-docs"}


INVALID_CHARACTERS = "must not contain NUL characters or lone surrogates"


def invalid_characters(request) -> str | None:
    """What carries a NUL character or lone surrogate (PostgreSQL cannot store either;
    unchecked they reach a query and fail as a 500): "path", "query", a parameter or a
    header name; None when the request is clean."""
    if is_unstorable(request.path):
        return "path"
    for key, values in request.GET.lists():
        if is_unstorable(key):
            return "query"
        if any(is_unstorable(value) for value in values):
            return key
    for name, value in request.META.items():
        if name.startswith("HTTP_") and isinstance(value, str) and is_unstorable(value):
            return name[5:].replace("_", "-").title()
    return None


class RequestGuardMiddleware:
    """One place for the checks every endpoint needs before a view runs.

    - A NUL character or lone surrogate in the path, a query parameter or a header is a 400
      `invalid_characters` naming it (PostgreSQL cannot store either; unchecked they reach a
      query and fail as a 500). Bodies are checked by memory_site.parsers.
    - A GET on the API with a query parameter the endpoint does not take is a 400
      `unknown_parameter` naming it.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        problem = invalid_characters(request)
        if problem:
            return error_response(
                400, "invalid_characters", f"{problem}: {INVALID_CHARACTERS}.", problem
            )
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method not in ("GET", "HEAD") or not request.path.startswith("/api/"):
            return None
        url_name = request.resolver_match.url_name if request.resolver_match else None
        if url_name in UNCHECKED_QUERY_URL_NAMES:
            return None
        allowed = QUERY_PARAMETERS.get(url_name, ())
        # `user` is answered after authentication by memory_site.permissions.OwnDataOnly: 403
        # when it names anyone but the caller (never an "unknown parameter" nor ignored).
        unknown = sorted(set(request.GET) - set(allowed) - {"user"})
        if not unknown:
            return None
        takes = f"; this endpoint takes {', '.join(allowed)}" if allowed else ""
        return error_response(
            400,
            "unknown_parameter",
            f"Unknown query parameter {unknown[0]!r}{takes}.",
            unknown[0],
        )
