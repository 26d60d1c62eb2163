"""OpenAPI post-processing: every operation documents each error it can return, with an example.

drf-spectacular documents the success responses from the views; the statuses the shared
machinery adds (guards, parsers, authentication, a database that is down) are the same for
many operations and are added here from one table, so the schema lists every status a client
can get (tests/memory_site/test_schema_fuzz.py checks this against the live server).
"""

from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
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

DESCRIPTIONS = {
    "400": "Malformed JSON, invalid input or characters, or an unknown query parameter "
    "(the field is named).",
    "401": "Missing or invalid credentials.",
    "403": "`?user=` names someone other than the caller (`other_user_forbidden`): the API "
    "serves only the caller's own data.",
    "404": "Unknown id, or an object of another user.",
    "409": "The object is in a state that does not allow this (e.g. a closed session).",
    "413": "Request body over the configured limit.",
    "415": "The body is not JSON (missing or wrong Content-Type).",
    "502": "The model provider failed; nothing was stored.",
    "503": "The database is unavailable; retry after `Retry-After` seconds.",
}

# (code, message, field) per status, the most likely error first.
GENERIC = {
    "400": [("invalid_input", "title: Not a valid string.", "title")],
    "401": [("not_authenticated", "Authentication credentials were not provided.", None)],
    "403": [
        (
            "other_user_forbidden",
            "The API only serves your own data: `user` may name no one but you. ...",
            "user",
        )
    ],
    "413": [("payload_too_large", "Request body of 2097152 bytes is over the limit.", None)],
    "415": [("unsupported_media_type", 'Unsupported media type "text/plain" in request.', None)],
    "502": [("upstream_error", "The model provider failed; nothing was stored.", None)],
    "503": [("database_unavailable", "The database is unavailable; retry shortly.", None)],
}
NUL_EXAMPLE = {
    "code": "invalid_characters",
    "message": "app_id: must not contain NUL characters or lone surrogates.",
    "field": "app_id",
}
UNKNOWN_PARAMETER = (
    "unknown_parameter",
    "Unknown query parameter 'sourse'; this endpoint takes project_id, source, ...",
    "sourse",
)
SESSION_NOT_FOUND = ("session_not_found", "Session 6f1c1f56-... not found.", "session_id")
SESSION_NOT_OPEN = ("session_not_open", "Session 6f1c1f56-... is closed.", None)
PAGE_NOT_FOUND = ("not_found", "Invalid page.", None)
WEBHOOK_NOT_FOUND = ("webhook_not_found", "No webhook endpoint 6f1c1f56-....", "endpoint_id")
PROFILE_ENTRY_NOT_FOUND = ("profile_entry_not_found", "No profile entry 42.", "entry_id")

# Per operation (method, path): the extra errors it can return beyond 400/401/503 (and
# 413/415 for operations with a body). Each list's first entry is the example shown first.
OPERATION_ERRORS: dict[tuple[str, str], dict[str, list[tuple]]] = {
    ("post", "/api/v1/chat/new"): {"404": [SESSION_NOT_FOUND[:2] + ("close_session_id",)]},
    ("post", "/api/v1/chat/heartbeat"): {"404": [SESSION_NOT_FOUND], "409": [SESSION_NOT_OPEN]},
    ("post", "/api/v1/chat/visibility"): {"404": [SESSION_NOT_FOUND], "409": [SESSION_NOT_OPEN]},
    ("post", "/api/v1/chat/close"): {"404": [SESSION_NOT_FOUND]},
    ("post", "/api/v1/chat/messages"): {"404": [SESSION_NOT_FOUND], "409": [SESSION_NOT_OPEN]},
    ("get", "/api/v1/chat/sessions"): {
        "400": [UNKNOWN_PARAMETER[:2] + ("sort",)],
        "404": [PAGE_NOT_FOUND],
    },
    ("get", "/api/v1/chat/sessions/{session_id}"): {"404": [SESSION_NOT_FOUND]},
    ("get", "/api/v1/chat/sessions/{session_id}/context"): {"404": [SESSION_NOT_FOUND]},
    ("post", "/api/v1/ai/chat/stream"): {
        "400": [
            ("invalid_input", "messages: The last message must be the user's new turn.", "messages")
        ],
        "404": [SESSION_NOT_FOUND],
        "409": [SESSION_NOT_OPEN],
        "502": GENERIC["502"],
    },
    ("post", "/api/v1/imports"): {
        "400": [
            ("invalid_input", "files: This list may not be empty.", "files"),
            (
                "archive_unsafe",
                "export.zip: member '../x.json' points outside the archive (path traversal)",
                "files",
            ),
        ],
        "413": [
            (
                "archive_too_large",
                "export.zip: member 'conversations.json' expands 1021 times; the limit is 100 "
                "(MNEMO_ARCHIVE_MAX_RATIO)",
                "files",
            )
        ],
    },
    ("get", "/api/v1/imports/{import_id}"): {
        "404": [("import_not_found", "Import 6f1c1f56-... not found.", None)],
    },
    ("post", "/api/v1/knowledge/ingest"): {
        "400": [("invalid_input", "text: Send either 'text' or a 'file'.", "text")],
        "413": [
            (
                "payload_too_large",
                "The document is 12000000 bytes; the limit is 10485760 (MNEMO_MAX_DOCUMENT_BYTES).",
                "text",
            )
        ],
    },
    **{
        (method, "/api/v1/knowledge/ingest/{job_id}"): {
            "404": [("ingest_job_not_found", "Ingest job 6f1c1f56-... not found.", None)]
        }
        for method in ("get", "delete")
    },
    ("post", "/api/v1/memory/commit"): {
        "404": [SESSION_NOT_FOUND],
        "502": [("commit_upstream_error", "The model failed; the mark is unchanged.", None)],
    },
    ("post", "/api/v1/memory/search"): {
        "400": [("invalid_input", "query: This field is required.", "query")],
        "502": [
            ("embedding_failed", "The embedding model failed; retry, or use mode=keyword.", None)
        ],
    },
    ("get", "/api/v1/memories"): {"400": [UNKNOWN_PARAMETER], "404": [PAGE_NOT_FOUND]},
    ("post", "/api/v1/memories"): {
        "400": [("invalid_input", "The memory text must not be empty.", "text")],
        "502": [("memory_upstream_error", "The model failed; nothing was stored.", None)],
    },
    **{
        (method, "/api/v1/memories/{memory_id}"): {
            "404": [("memory_not_found", "Memory 42 not found.", "memory_id")]
        }
        for method in ("get", "patch", "delete")
    },
    ("patch", "/api/v1/memories/{memory_id}"): {
        "404": [("memory_not_found", "Memory 42 not found.", "memory_id")],
        "502": [("embedding_failed", "The embedding model failed; nothing was changed.", None)],
    },
    ("get", "/api/v1/memories/{memory_id}/history"): {
        "404": [("memory_not_found", "Memory 42 not found.", "memory_id")]
    },
    ("patch", "/api/v1/profile"): {"404": [PROFILE_ENTRY_NOT_FOUND]},
    **{
        (method, "/api/v1/profile/entries/{entry_id}"): {"404": [PROFILE_ENTRY_NOT_FOUND]}
        for method in ("get", "patch", "delete")
    },
    ("get", "/api/v1/profile/entries/{entry_id}/history"): {"404": [PROFILE_ENTRY_NOT_FOUND]},
    **{
        (method, path): {"404": [WEBHOOK_NOT_FOUND]}
        for method, path in (
            ("get", "/api/v1/webhooks/{endpoint_id}"),
            ("patch", "/api/v1/webhooks/{endpoint_id}"),
            ("delete", "/api/v1/webhooks/{endpoint_id}"),
            ("post", "/api/v1/webhooks/{endpoint_id}/secret"),
            ("get", "/api/v1/webhooks/{endpoint_id}/deliveries"),
        )
    },
    ("get", "/api/v1/entities"): {"400": [UNKNOWN_PARAMETER], "404": [PAGE_NOT_FOUND]},
    **{
        (method, "/api/v1/entities/{entity_id}"): {
            "404": [("entity_not_found", "Entity not found.", "entity_id")]
        }
        for method in ("get", "patch", "delete")
    },
    ("post", "/api/v1/entities/merge"): {
        "404": [("entity_not_found", "Entity not found.", "target_id")]
    },
    ("delete", "/api/v1/me"): {
        "400": [
            ("confirmation_required", "Send your username in `confirm`.", "confirm"),
            ("confirmation_mismatch", "`confirm` does not match your username.", "confirm"),
        ],
        "409": [("erasure_blocked", "Cannot erase: other data depends on this user's rows.", None)],
        "503": [
            (
                "task_queue_unavailable",
                "The task queue (Redis) is unavailable; nothing was erased. Retry shortly.",
                None,
            )
        ],
    },
    ("get", "/api/v1/usage"): {
        "400": [("invalid_range", "until must be after since.", "until")],
    },
    ("get", "/api/health"): {"400": [UNKNOWN_PARAMETER[:2] + ("x",)]},
}

# The SSE events of POST /api/v1/ai/chat/stream, documented as components.
STREAM_EVENTS = {
    "ChatStreamContextEvent": {
        "description": "`event: context` (only with `X-Reggie-Context-Debug: 1`).",
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["built", "reused", "skipped", "failed"]},
            "reason": {"type": "string"},
            "turn": {"type": "integer"},
            "topic": {"type": "object", "nullable": True},
            "segments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "chars": {"type": "integer"},
                        "truncated": {"type": "boolean"},
                    },
                },
            },
            "pack": {"type": "string"},
            "hash": {"type": "string"},
            "reused": {"type": "boolean"},
            "memories": {"type": "array", "items": {"type": "object"}},
            "elapsed_ms": {"type": "number"},
            "skipped": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Parts left out to stay within the latency budget.",
            },
        },
    },
    "ChatStreamMessageEvent": {
        "description": "`event: message`, repeated: one delta of the reply.",
        "type": "object",
        "properties": {"chunk": {"type": "string"}, "id": {"type": "string"}},
        "required": ["chunk", "id"],
    },
    "ChatStreamDoneEvent": {
        "description": "`event: done`: the reply is complete and stored.",
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["completed"]},
            "id": {"type": "string"},
            "model": {"type": "string"},
            "message_ids": {
                "type": "object",
                "properties": {
                    "user": {"type": "integer", "nullable": True},
                    "assistant": {"type": "integer", "nullable": True},
                },
            },
            "usage": {
                "type": "object",
                "properties": {
                    "tokens_in": {"type": "integer"},
                    "tokens_out": {"type": "integer"},
                },
            },
            "context": {
                "type": "object",
                "properties": {"chars": {"type": "integer"}, "hash": {"type": "string"}},
            },
        },
        "required": ["status", "id"],
    },
    "ChatStreamErrorEvent": {
        "description": "`event: error`: the model failed after the stream started (the user "
        "message is kept).",
        "type": "object",
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        "required": ["code", "message"],
    },
}
STREAM_EXAMPLE = (
    'event: message\ndata: {"chunk": "The JR Pass", "id": "resp_1"}\n\n'
    'event: message\ndata: {"chunk": " covers Kyoto.", "id": "resp_1"}\n\n'
    ": keepalive\n\n"
    'event: done\ndata: {"status": "completed", "id": "resp_1", "model": "gpt-4o-mini", '
    '"message_ids": {"user": 41, "assistant": 42}, "usage": {"tokens_in": 812, '
    '"tokens_out": 9}, "context": {"chars": 1432, "hash": "9f2c"}}\n\n'
)


def _error_examples(entries: list[tuple]) -> dict:
    examples = {}
    for code, message, field in entries:
        error = {"code": code, "message": message}
        if field:
            error["field"] = field
        examples[code] = {"value": {"error": error}}
    return examples


def _statuses(method: str, path: str, operation: dict) -> dict[str, list[tuple]]:
    extra = OPERATION_ERRORS.get((method, path), {})
    default_400 = [UNKNOWN_PARAMETER] if method == "get" else GENERIC["400"]
    statuses: dict[str, list[tuple]] = {"400": list(extra.get("400", default_400))}
    if path != "/api/health":
        statuses["401"] = GENERIC["401"]
        statuses["403"] = GENERIC["403"]  # memory_site.permissions.OwnDataOnly
    if "requestBody" in operation or method in ("post", "put", "patch"):
        statuses["413"] = GENERIC["413"]
        statuses["415"] = GENERIC["415"]
    statuses["503"] = GENERIC["503"] + list(extra.get("503", []))
    for status, entries in extra.items():
        statuses.setdefault(status, entries)
    return dict(sorted(statuses.items()))


STREAM_EVENT_NAMES = ("context", "message", "done", "error")


def _document_stream(result: dict) -> None:
    schemas = result["components"]["schemas"]
    schemas.update(STREAM_EVENTS)
    operation = result["paths"].get("/api/v1/ai/chat/stream", {}).get("post")
    if not operation:
        return
    operation["responses"]["200"] = {
        "description": "A `text/event-stream` of `event: <name>` / `data: <JSON>` frames, in "
        "this order: `context` (debug only), `message` (repeated), then `done` or `error`; "
        "a `: keepalive` comment after 10 s of silence. Each event's `data` is the component "
        "named in `x-events`.",
        "content": {
            "text/event-stream": {
                # One server-sent event (what SSE-aware tools such as schemathesis validate
                # each event against); `data` is the JSON of the component in `x-events`.
                "schema": {
                    "type": "object",
                    "description": "One server-sent event.",
                    "properties": {
                        "event": {"type": "string", "enum": list(STREAM_EVENT_NAMES)},
                        "data": {
                            "type": "string",
                            "description": "JSON: the component named in `x-events`.",
                        },
                    },
                    "required": ["event", "data"],
                },
                "example": STREAM_EXAMPLE,
                "x-events": {
                    name: {"$ref": f"#/components/schemas/ChatStream{name.capitalize()}Event"}
                    for name in STREAM_EVENT_NAMES
                },
            }
        },
    }


def add_error_responses(result, generator, request, public):
    """drf-spectacular POSTPROCESSING_HOOK: every operation's errors, with examples of its own,
    and the chat stream's events."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for status, entries in _statuses(method, path, operation).items():
                examples = _error_examples(entries)
                if status == "400" and path != "/api/health":
                    examples["invalid_characters"] = {"value": {"error": NUL_EXAMPLE}}
                response = {
                    "description": DESCRIPTIONS[status],
                    "content": {"application/json": {"schema": reference, "examples": examples}},
                }
                if status == "503":
                    response["headers"] = {
                        "Retry-After": {
                            "schema": {"type": "integer"},
                            "description": "Seconds to wait before retrying.",
                        }
                    }
                if path == "/api/health" and status == "503":
                    continue  # health documents its own 503 body
                operation["responses"][status] = response
    _document_stream(result)
    return result
