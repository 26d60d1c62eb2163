"""One domain error type and one exception handler for the whole API.

Every error body is `{"error": {"code", "message", "field"?}}`. Services raise `DomainError`
subclasses; DRF and Django exceptions are translated here so views never build error bodies.
"""

from __future__ import annotations

import errno
import sys

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponse, JsonResponse
from django.views.defaults import bad_request, page_not_found, server_error
from rest_framework import exceptions as drf
from rest_framework.response import Response


class DomainError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.field = field


class InvalidInput(DomainError):
    status_code = 400
    code = "invalid_input"


class Forbidden(DomainError):
    status_code = 403
    code = "forbidden"


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(DomainError):
    status_code = 413
    code = "payload_too_large"


class UpstreamError(DomainError):
    """A model provider (LLM or embedder) failed; nothing was stored."""

    status_code = 502
    code = "upstream_error"


class ServiceUnavailable(DomainError):
    status_code = 503
    code = "service_unavailable"


# The database refused or lost the connection: a 503 the client may retry, never a 500.
# Django closes a connection that failed at the end of the request, so the next request
# reconnects by itself once the database is back.
# The disk (or the process's file-size limit) is full: the upload is refused, nothing is kept.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
DISK_FULL_MESSAGE = "The server has no space left for this upload; nothing was stored."


def is_disk_full(exc: BaseException | None) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS


DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5
DATABASE_UNAVAILABLE_MESSAGE = "The database is unavailable; retry shortly."


def error_body(code: str, message: str, field: str | None = None) -> dict:
    error = {"code": code, "message": message}
    if field:
        error["field"] = field
    return {"error": error}


def error_response(status: int, code: str, message: str, field: str | None = None) -> JsonResponse:
    """A JSON error for code paths outside DRF (middleware, plain Django views, 404 handler)."""
    return JsonResponse(error_body(code, message, field), status=status)


def _first_validation_error(detail, prefix: str = "") -> tuple[str | None, str]:
    """Flatten DRF's nested validation detail to the first (field path, message)."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int):  # DRF keys list-item errors by index
                path = f"{prefix}[{key}]" if prefix else f"[{key}]"
            elif key == "non_field_errors":
                path = prefix or None
            else:
                path = f"{prefix}.{key}" if prefix else key
            sub_field, message = _first_validation_error(value, path or "")
            return sub_field or path, message
    if isinstance(detail, list) and detail:
        for index, item in enumerate(detail):
            if item in ({}, [], None):
                continue
            if isinstance(item, (dict, list)):
                return _first_validation_error(item, f"{prefix}[{index}]" if prefix else str(index))
            return prefix or None, str(item)
    return prefix or None, str(detail)


_DRF_CODES = {
    drf.NotAuthenticated: (401, "not_authenticated"),
    drf.AuthenticationFailed: (401, "authentication_failed"),
    drf.PermissionDenied: (403, "permission_denied"),
    drf.NotFound: (404, "not_found"),
    drf.MethodNotAllowed: (405, "method_not_allowed"),
    drf.NotAcceptable: (406, "not_acceptable"),
    drf.UnsupportedMediaType: (415, "unsupported_media_type"),
    drf.Throttled: (429, "throttled"),
}


def api_exception_handler(exc, context):
    """DRF EXCEPTION_HANDLER: map every failure to the error envelope with the right status."""
    if isinstance(exc, DATABASE_UNAVAILABLE):
        response = Response(
            error_body("database_unavailable", DATABASE_UNAVAILABLE_MESSAGE), status=503
        )
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if isinstance(exc, DomainError):
        response = Response(error_body(exc.code, exc.message, exc.field), status=exc.status_code)
        if exc.status_code == 503:
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if is_disk_full(exc):
        response = Response(error_body("storage_full", DISK_FULL_MESSAGE), status=507)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if isinstance(exc, Http404):
        return Response(error_body("not_found", "Not found."), status=404)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(error_body("permission_denied", "Permission denied."), status=403)
    if isinstance(exc, RequestDataTooBig):
        return Response(error_body("payload_too_large", "Request body is too large."), status=413)
    if isinstance(exc, SuspiciousOperation):
        # e.g. an uploaded file without a name, or too many form fields
        return Response(error_body("bad_request", f"Malformed request: {exc}"), status=400)
    if isinstance(exc, RecursionError):
        return Response(
            error_body("malformed_json", "Request body is nested too deeply."), status=400
        )
    if isinstance(exc, drf.ParseError):
        return Response(
            error_body("malformed_json", f"Malformed request body: {exc.detail}"), status=400
        )
    if isinstance(exc, drf.ValidationError):
        field, message = _first_validation_error(exc.detail)
        text = f"{field}: {message}" if field else message
        return Response(error_body("invalid_input", text, field), status=400)
    for exc_type, (status, code) in _DRF_CODES.items():
        if isinstance(exc, exc_type):
            response = Response(error_body(code, str(exc.detail)), status=status)
            if status == 401:
                response["WWW-Authenticate"] = 'Token realm="api"'
            if isinstance(exc, drf.Throttled) and exc.wait:
                response["Retry-After"] = str(int(exc.wait))
            return response
    if isinstance(exc, drf.APIException):
        return Response(error_body(exc.default_code, str(exc.detail)), status=exc.status_code)
    return None


def json_400(request, exception=None):
    """JSON for API paths (Django's SuspiciousOperation outside DRF), Django's page otherwise."""
    if request.path.startswith("/api/"):
        return error_response(400, "bad_request", "Malformed request.")
    return bad_request(request, exception)


def json_404(request, exception=None):
    """JSON for API paths, Django's page for the web UI."""
    if request.path.startswith("/api/"):
        return error_response(404, "not_found", f"No endpoint or object at {request.path}.")
    return page_not_found(request, exception)


def json_500(request):
    """JSON for API paths, Django's page for the web UI; a 503 when the database is down.

    Django calls this inside its `except` block, so the failure is in `sys.exc_info()`; it
    covers what DRF's handler never sees (middleware, web pages, session lookups).
    """
    if isinstance(sys.exc_info()[1], DATABASE_UNAVAILABLE):
        if request.path.startswith("/api/"):
            response = error_response(503, "database_unavailable", DATABASE_UNAVAILABLE_MESSAGE)
        else:
            response = HttpResponse(
                DATABASE_UNAVAILABLE_MESSAGE, status=503, content_type="text/plain"
            )
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if is_disk_full(sys.exc_info()[1]):
        if request.path.startswith("/api/"):
            response = error_response(507, "storage_full", DISK_FULL_MESSAGE)
        else:
            response = HttpResponse(DISK_FULL_MESSAGE, status=507, content_type="text/plain")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if request.path.startswith("/api/"):
        return error_response(500, "server_error", "Internal server error.")
    return server_error(request)
