"""OpenAI's error shape, used on the /v1 paths only: `{"error": {"message", "type", "param",
"code"}}`, so the `openai` SDK raises its usual typed exceptions (AuthenticationError,
BadRequestError, NotFoundError...) with a readable message."""

from __future__ import annotations

from django.http import JsonResponse

from memory_site.errors import DomainError

_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    502: "api_error",
    503: "api_error",
}


class OpenAIError(Exception):
    """An error answered in OpenAI's shape."""

    def __init__(self, status: int, message: str, *, code: str, param: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param

    @classmethod
    def from_domain(cls, exc: DomainError, *, param: str | None = None) -> OpenAIError:
        return cls(exc.status_code, exc.message, code=exc.code, param=param or exc.field)


def openai_error_body(status: int, message: str, *, code: str, param: str | None = None) -> dict:
    return {
        "error": {
            "message": message,
            "type": _TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error"),
            "param": param,
            "code": code,
        }
    }


def openai_error_response(exc: OpenAIError) -> JsonResponse:
    response = JsonResponse(
        openai_error_body(exc.status, exc.message, code=exc.code, param=exc.param),
        status=exc.status,
    )
    if exc.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="mnemo"'
    return response
