"""OpenAPI post-processing: every operation documents the shared error envelope."""

from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "example": "session_not_found"},
                "message": {"type": "string"},
                "field": {
                    "type": "string",
                    "description": "The request field at fault, when there is one.",
                },
            },
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}

ERROR_RESPONSES = {
    "400": "Malformed JSON or invalid input (the field is named).",
    "401": "Missing or invalid credentials.",
    "404": "Unknown id, or an object of another user.",
    "409": "The object is in a state that does not allow this (e.g. a closed session).",
    "413": "Request body over the configured limit.",
}


def add_error_responses(result, generator, request, public):
    """drf-spectacular POSTPROCESSING_HOOK: add the error envelope to every authenticated operation."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            codes = dict(ERROR_RESPONSES)
            if path.endswith("/health"):
                codes = {}
            elif method == "get":
                codes.pop("409")
                codes.pop("413")
            for code, description in codes.items():
                operation["responses"].setdefault(
                    code, {"description": description, "content": reference}
                )
    return result
