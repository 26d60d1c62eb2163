"""OpenAPI: the /v1 paths are plain async views (not DRF), so they are added to the schema here.

They follow OpenAI's Chat Completions and Models API; only what Mnemo adds or checks is
spelled out, every other request field is passed to the upstream unchanged.
"""

from __future__ import annotations

OPENAI_ERROR_SCHEMA = {
    "type": "object",
    "description": "OpenAI's error shape (used on /v1 only).",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string", "example": "invalid_request_error"},
                "param": {"type": "string", "nullable": True},
                "code": {"type": "string", "example": "invalid_api_key"},
            },
            "required": ["message", "type", "param", "code"],
        }
    },
    "required": ["error"],
}

CHAT_REQUEST_SCHEMA = {
    "type": "object",
    "description": "OpenAI's chat completion request; unknown fields are forwarded unchanged.",
    "additionalProperties": True,
    "properties": {
        "model": {"type": "string", "description": "Passed to the upstream as given."},
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": True,
                "properties": {
                    "role": {
                        "type": "string",
                        "enum": ["system", "developer", "user", "assistant", "tool", "function"],
                    },
                    "content": {
                        "oneOf": [
                            {"type": "string"},
                            {"type": "array", "items": {"type": "object"}},
                        ],
                        "nullable": True,
                    },
                },
                "required": ["role"],
            },
        },
        "stream": {"type": "boolean"},
        "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
        "n": {"type": "integer", "enum": [1]},
        "tools": {"type": "array", "items": {"type": "object"}},
        "tool_choice": {"oneOf": [{"type": "string"}, {"type": "object"}]},
        "response_format": {"type": "object"},
    },
    "required": ["model", "messages"],
}

_AUTH_NOTE = (
    "Auth: `Authorization: Bearer <Mnemo API token>` (the `openai` SDK's api_key) or "
    "`Token <token>`."
)


def _errors(codes: dict[str, str]) -> dict:
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/OpenAIError"}}}
    return {code: {"description": text, "content": reference} for code, text in codes.items()}


def add_openai_paths(result, generator, request, public):
    """drf-spectacular POSTPROCESSING_HOOK: document POST /v1/chat/completions, GET /v1/models."""
    result.setdefault("components", {}).setdefault("schemas", {})["OpenAIError"] = (
        OPENAI_ERROR_SCHEMA
    )
    paths = result.setdefault("paths", {})
    paths["/v1/chat/completions"] = {
        "post": {
            "operationId": "openai_chat_completions",
            "tags": ["openai-compatible"],
            "summary": "OpenAI-compatible chat completions, with Mnemo's memory",
            "description": (
                "Wire-compatible with OpenAI's `POST /v1/chat/completions` (JSON, or "
                "`chat.completion.chunk` SSE ending in `data: [DONE]` with `stream: true`). "
                "Forwards to the configured upstream (OPENAI_BASE_URL / OPENAI_API_KEY) with "
                "the context pack prepended as one system message; tools, tool_choice, tool "
                "messages and response_format pass through unchanged. The conversation is "
                "logged into one Mnemo session: matched by `X-Mnemo-Session-Id`, else by "
                "(system prompt, first user message; after an opening that says nothing, "
                'such as "Hi", the user messages up to the first that does); only messages '
                "not stored yet are "
                "appended. Response headers: `X-Mnemo-Session-Id`, `X-Mnemo-Context` (pack "
                "status) and `X-Mnemo-Context-Hash`. " + _AUTH_NOTE
            ),
            "parameters": [
                {
                    "name": "X-Mnemo-Session-Id",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string", "format": "uuid"},
                    "description": "Log into this open session of the caller's.",
                },
                {
                    "name": "X-Mnemo-Memory",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string", "enum": ["on", "off"]},
                    "description": "`off`: no context pack for this call (still logged).",
                },
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": CHAT_REQUEST_SCHEMA}},
            },
            "responses": {
                "200": {
                    "description": "The upstream's chat.completion, or its chunk stream.",
                    "content": {
                        "application/json": {"schema": {"type": "object"}},
                        "text/event-stream": {"schema": {"type": "string"}},
                    },
                },
                **_errors(
                    {
                        "400": "Invalid request (the `param` is named), or the upstream's 4xx.",
                        "401": "Missing or invalid API key.",
                        "404": "X-Mnemo-Session-Id is not one of the caller's sessions.",
                        "409": "X-Mnemo-Session-Id names a closed session.",
                        "413": "Request body over MNEMO_MAX_BODY_BYTES.",
                        "502": "The upstream failed or could not be reached.",
                        "503": "No upstream is configured.",
                    }
                ),
            },
        }
    }
    paths["/v1/models"] = {
        "get": {
            "operationId": "openai_models",
            "tags": ["openai-compatible"],
            "summary": "The models chat apps can pick (OpenAI's list shape)",
            "description": (
                "MNEMO_GATEWAY_MODELS when set, else the upstream's `GET /models`, else "
                "LLM_MODEL. " + _AUTH_NOTE
            ),
            "responses": {
                "200": {
                    "description": '`{"object": "list", "data": [{"id", "object", ...}]}`',
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                **_errors(
                    {
                        "401": "Missing or invalid API key.",
                        "503": "No upstream is configured (and MNEMO_GATEWAY_MODELS is unset).",
                    }
                ),
            },
        }
    }
    return result
