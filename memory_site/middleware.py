"""Request guards that must run before any view parses a body."""

from __future__ import annotations

from django.conf import settings

from memory_site.errors import error_response


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
