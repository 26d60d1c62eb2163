"""Every Mnemo operation the client calls: method, path, the body or query fields it may send,
and the shape of its answer. The client's schema test checks each against `/api/schema/`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_client import models


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    body: tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    response: type | None = None
    # Answers whose status this is are the operation's success (for the schema check).
    status: int = 200


OPERATIONS: dict[str, Operation] = {
    "sessions.new": Operation(
        "POST",
        "/api/v1/chat/new",
        body=("title", "app_id", "agent_id", "project_id", "metadata", "close_session_id"),
        response=models.Session,
        status=201,
    ),
    "sessions.heartbeat": Operation("POST", "/api/v1/chat/heartbeat", body=("session_id",)),
    "sessions.close": Operation("POST", "/api/v1/chat/close", body=("session_id",), status=202),
    "sessions.message": Operation(
        "POST",
        "/api/v1/chat/messages",
        body=("session_id", "role", "content", "model"),
        response=models.StoredMessage,
        status=201,
    ),
    "sessions.list": Operation(
        "GET", "/api/v1/chat/sessions", query=("app_id", "page", "page_size"), response=models.Page
    ),
    "sessions.get": Operation("GET", "/api/v1/chat/sessions/{session_id}", response=models.Session),
    "chat.stream": Operation(
        "POST",
        "/api/v1/ai/chat/stream",
        body=("session_id", "messages", "context_version", "attachments", "model"),
    ),
    "memory.commit": Operation(
        "POST",
        "/api/v1/memory/commit",
        body=("session_id", "rag_session_id"),
        response=models.CommitResult,
    ),
    "memories.add": Operation(
        "POST",
        "/api/v1/memories",
        body=("text", "project_id"),
        response=models.MemoryAdded,
        status=201,
    ),
    "memories.list": Operation(
        "GET",
        "/api/v1/memories",
        query=("source", "session_id", "project_id", "app_id", "q", "page", "page_size"),
        response=models.MemoryPage,
    ),
    "memories.get": Operation("GET", "/api/v1/memories/{memory_id}", response=models.Memory),
    "memories.update": Operation(
        "PATCH",
        "/api/v1/memories/{memory_id}",
        body=("content", "topics", "metadata", "project_id", "reason"),
        response=models.Memory,
    ),
    "memories.delete": Operation("DELETE", "/api/v1/memories/{memory_id}", status=204),
    "memories.history": Operation(
        "GET", "/api/v1/memories/{memory_id}/history", response=models.MemoryHistory
    ),
    "search": Operation(
        "POST",
        "/api/v1/memory/search",
        body=("query", "top_k", "mode", "sources", "app_id", "filters", "as_of", "max_tokens"),
        response=models.SearchResult,
    ),
    "imports.upload": Operation(
        "POST",
        "/api/v1/imports",
        body=("files", "app_id", "project_id", "agent_id"),
        response=models.ImportJob,
        status=202,
    ),
    "imports.get": Operation("GET", "/api/v1/imports/{import_id}", response=models.ImportJob),
    "entities.list": Operation(
        "GET",
        "/api/v1/entities",
        query=("type", "bucket", "q", "app_id", "page", "page_size"),
        response=models.Page,
    ),
    "entities.get": Operation("GET", "/api/v1/entities/{entity_id}", response=models.Entity),
    "entities.merge": Operation(
        "POST",
        "/api/v1/entities/merge",
        body=("target_id", "source_ids"),
        response=models.Entity,
    ),
    "profile.get": Operation(
        "GET", "/api/v1/profile", query=("app_id", "include_history"), response=models.Profile
    ),
    "profile.update": Operation(
        "PATCH",
        "/api/v1/profile",
        body=("app_id", "add", "update", "delete"),
        response=models.Profile,
    ),
    "webhooks.create": Operation(
        "POST",
        "/api/v1/webhooks",
        body=("url", "events", "description"),
        response=models.WebhookEndpointCreated,
        status=201,
    ),
    "webhooks.list": Operation("GET", "/api/v1/webhooks", response=models.WebhookEndpoint),
    "webhooks.delete": Operation("DELETE", "/api/v1/webhooks/{endpoint_id}", status=204),
    "me.export": Operation("GET", "/api/v1/me/export"),
    "me.erase": Operation("DELETE", "/api/v1/me", body=("confirm",), response=models.Erased),
}
