"""Every django-q2 task Mnemo queues or schedules, by dotted path, each written once.

A lower floor queues a higher floor's work by path (sessions_app may not import context_app), so
the paths live here, beneath every app. `memory_site.checks` imports each one at start-up, so a
typo stops `manage.py check`, `make run` and the test suite instead of failing in a worker.
"""

from __future__ import annotations

# context_app: session close, re-summarize, rollups, consolidation.
SESSION_CLOSE_TASK = "context_app.tasks.session_close_task"
SESSION_RESUMMARIZE_TASK = "context_app.tasks.session_resummarize_task"
USER_ROLLUPS_REBUILD_TASK = "context_app.tasks.user_rollups_rebuild_task"
CONSOLIDATION_TASK = "context_app.tasks.consolidation_task"
# imports_app: chat-export imports, the entities and the passage vectors of an imported file
# (each after its import), and the resumption of those whose worker died (memory_site.leases).
IMPORT_TASK = "imports_app.tasks.import_job_task"
IMPORTS_RESUME_TASK = "imports_app.tasks.imports_resume_abandoned_task"
IMPORT_ENTITIES_TASK = "imports_app.tasks.import_entities_backfill_task"
IMPORT_PASSAGE_VECTORS_TASK = "imports_app.tasks.import_passage_vectors_task"
# ingestion_app: document ingest, the contextual-header backfill of inline chunks, and the
# resumption of those jobs and of session closes whose worker died (memory_site.leases).
DOCUMENT_INGEST_TASK = "ingestion_app.tasks.document_ingest_job_task"
JOBS_RESUME_TASK = "ingestion_app.tasks.jobs_resume_abandoned_task"
BACKFILL_TASK = "ingestion_app.tasks.chunk_header_backfill_task"
# ingestion_app: chat items still without a vector (the process that stored them died, or the
# embedder failed), every minute (ingestion_app.services.deferred_embeddings).
EMBED_MISSING_TASK = "ingestion_app.tasks.embed_missing_task"
# ingestion_app: entity name embeddings + similarity merges, the model's entity extraction.
ENTITIES_RESOLVE_TASK = "entities_app.tasks.entities_resolve_task"
ENTITIES_LLM_TASK = "entities_app.tasks.entities_llm_extract_task"
# sessions_app: the periodic schedules (`manage.py upsert_schedules`).
CLOSE_STALE_SESSIONS_TASK = "sessions_app.tasks.close_stale_sessions_task"
RETENTION_TASK = "sessions_app.tasks.retention_task"

# profile_app: the model's reading of a user message; the statements of an imported file's
# user turns and of the facts a commit wrote.
PROFILE_MESSAGE_READ_TASK = "profile_app.tasks.profile_message_read_task"
PROFILE_IMPORT_READ_TASK = "profile_app.tasks.profile_import_read_task"
PROFILE_MEMORIES_READ_TASK = "profile_app.tasks.profile_memories_read_task"

# webhooks_app: one delivery's attempt, and the minute sweep of the retries that are due.
WEBHOOK_DELIVER_TASK = "webhooks_app.tasks.webhook_deliver_task"
WEBHOOKS_DUE_TASK = "webhooks_app.tasks.webhooks_deliver_due_task"

# gateway_app: the after-message hooks of the older messages a chat app's call brings along.
GATEWAY_BACKLOG_INDEX_TASK = "gateway_app.tasks.messages_hooks_task"

TASK_PATHS = (
    GATEWAY_BACKLOG_INDEX_TASK,
    PROFILE_MESSAGE_READ_TASK,
    WEBHOOK_DELIVER_TASK,
    WEBHOOKS_DUE_TASK,
    PROFILE_IMPORT_READ_TASK,
    PROFILE_MEMORIES_READ_TASK,
    SESSION_CLOSE_TASK,
    SESSION_RESUMMARIZE_TASK,
    USER_ROLLUPS_REBUILD_TASK,
    CONSOLIDATION_TASK,
    IMPORT_TASK,
    IMPORTS_RESUME_TASK,
    DOCUMENT_INGEST_TASK,
    JOBS_RESUME_TASK,
    BACKFILL_TASK,
    EMBED_MISSING_TASK,
    ENTITIES_RESOLVE_TASK,
    ENTITIES_LLM_TASK,
    IMPORT_ENTITIES_TASK,
    IMPORT_PASSAGE_VECTORS_TASK,
    CLOSE_STALE_SESSIONS_TASK,
    RETENTION_TASK,
)
