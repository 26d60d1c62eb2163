"""Request guards that must run before any view parses a body."""

from __future__ import annotations

from django.conf import settings

from memory_site.errors import error_response


class BodySizeLimitMiddleware:
    """Answer 413 for bodies over the limit before they are read.

    Upload endpoints (imports, document ingest) get MNEMO_MAX_UPLOAD_BYTES; everything else
    MNEMO_MAX_BODY_BYTES. A body with no Content-Length is still capped by Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE, which the API error handler also maps to 413.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_response(400, "invalid_content_length", "Content-Length is not a number.")
        is_upload = any(request.path.startswith(p) for p in settings.MNEMO_UPLOAD_PATHS)
        limit = settings.MNEMO_MAX_UPLOAD_BYTES if is_upload else settings.MNEMO_MAX_BODY_BYTES
        if length > limit:
            return error_response(
                413, "payload_too_large", f"Request body of {length} bytes is over the {limit}-byte limit."
            )
        return self.get_response(request)
