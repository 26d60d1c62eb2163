"""Typed shapes of Mnemo's answers, as its OpenAPI schema (`/api/schema/`) describes them.

Each is a `TypedDict` (the client returns the JSON it got, so nothing is lost when the server
adds a field); the client's test compares every key here with the live schema, so a field
renamed or dropped on one side fails the suite.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Session(TypedDict, total=False):
    session_id: str
    title: str
    status: str
    app_id: str
    agent_id: str
    project_id: str
    visible: bool
    opened_at: str
    last_heartbeat_at: str | None
    closed_at: str | None
    metadata: dict


class Page(TypedDict, total=False):
    count: int
    next: str | None
    previous: str | None
    results: list[dict]


class StoredMessage(TypedDict, total=False):
    id: int
    session_id: str
    role: str
    token_count: int
    created_at: str


class Memory(TypedDict, total=False):
    id: int
    source: str
    content: str
    header: str
    topics: list[str]
    app_id: str
    project_id: str
    session_id: str | None
    source_message_ids: list[int]
    metadata: dict
    occurred_at: str
    created_at: str
    updated_at: str


class MemoryAdded(TypedDict, total=False):
    status: str  # added, updated, known or duplicate
    memory_id: int | None
    content: str
    previous_content: str


class MemoryPage(TypedDict, total=False):
    count: int
    next: str | None
    previous: str | None
    results: list[Memory]


class MemoryHistory(TypedDict, total=False):
    memory_id: int
    count: int
    results: list[dict]


class Erased(TypedDict, total=False):
    user_id: int
    erased: bool
    rows_deleted: int
    deleted: dict[str, int]
    files_deleted: int


class SearchHit(TypedDict, total=False):
    id: int
    source: str
    content: str
    score: float
    similarity: float | None
    relevance: float
    why: list[dict]
    superseded: dict | None
    trimmed: bool
    provenance: str
    metadata: dict
    occurred_at: str


class SearchResult(TypedDict, total=False):
    items: list[SearchHit]
    search_ms: float
    total_tokens_used: int


class CommitResult(TypedDict, total=False):
    session_id: str
    high_water_mark: int
    messages_read: int
    facts_committed: int
    facts_updated: int
    duplicates_skipped: int
    facts: list[dict]
    toast: dict


class ImportJob(TypedDict, total=False):
    import_id: str
    status: str  # queued, running, done, partial or failed
    error: str
    summary: dict
    files: list[dict]
    created_at: str
    started_at: str | None
    finished_at: str | None


class Entity(TypedDict, total=False):
    id: int
    name: str
    type: str
    description: str
    aliases: list[str]
    mention_count: int


class ProfileEntry(TypedDict, total=False):
    id: int
    kind: str
    text: str
    status: str
    origin: str
    stated_at: str


class Profile(TypedDict, total=False):
    app_id: str
    instructions: list[ProfileEntry]
    preferences: list[ProfileEntry]
    facts: list[ProfileEntry]
    history: list[ProfileEntry]


class WebhookEndpoint(TypedDict, total=False):
    id: str
    url: str
    description: str
    events: list[str]
    enabled: bool
    disabled_reason: str


class WebhookEndpointCreated(WebhookEndpoint, total=False):
    secret: str  # the signing secret: only in the answer that created or rotated it


class ChatEvent(TypedDict):
    """One server-sent event of a chat stream: `event` is context, message, done or error."""

    event: str
    data: dict[str, Any]
