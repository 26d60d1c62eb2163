"""The one exception the client raises for an answer that is not a success."""

from __future__ import annotations


class MnemoError(Exception):
    """An error answer of Mnemo (`{"error": {code, message, field}}`) or a failed request.

    `status` is the HTTP status (0 when no answer came: a timeout, a refused connection);
    `code` Mnemo's error code ("not_found", "invalid_input", "database_unavailable"...);
    `field` the input field the error names, when it names one.
    """

    def __init__(self, status: int, code: str, message: str, field: str | None = None):
        super().__init__(f"{status} {code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field


def error_from_response(status: int, body: object, text: str = "") -> MnemoError:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return MnemoError(
            status,
            str(error.get("code") or "error"),
            str(error.get("message") or text),
            error.get("field"),
        )
    return MnemoError(status, "http_error", text[:500] or f"HTTP {status}")
