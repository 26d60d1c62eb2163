"""Every environment setting Mnemo reads, in one table: name, type, default and what it does.

`memory_site/settings.py` reads each through `setting(name)`, which refuses a name that is
not here, so a new setting cannot be read without being documented. `.env.example` and the
docs' settings reference are generated from this table (`manage.py docs_reference`), and a
test checks that both are current and that every name here is read, so the three never drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory_site.env import env_bool, env_float, env_int, env_list, env_str

# A default worked out at start-up from other settings or the machine; `default_doc` says how.
COMPUTED = object()


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str  # str, bool, int, float, list, path
    default: object
    help: str
    group: str
    default_doc: str | None = None
    # A value shown commented out in .env.example instead of the default (a URL, a key...).
    example: str | None = None

    def default_text(self) -> str:
        """The default as the reference and .env.example show it."""
        if self.default is COMPUTED:
            return self.default_doc or ""
        if self.kind == "bool":
            return "1" if self.default else "0"
        if self.kind == "list":
            return ",".join(str(item) for item in self.default)
        return str(self.default)


DATABASE = "Database"
TASKS = "Task queue and caches"
SECURITY = "Mode, secrets and hosts"
MODELS = "Models"
EMBEDDER = "Local embedder"
LIMITS = "Limits and uploads"
MEMORY = "Sessions and memory"
GATEWAY = "OpenAI-compatible endpoint (/v1)"
WEBHOOKS = "Webhooks"
METRICS = "Metrics"
SERVING = "Serving"

SETTINGS: tuple[Setting, ...] = (
    # --- Database
    Setting(
        "DATABASE_URL",
        "str",
        "",
        "Any PostgreSQL with pgvector (TCP + password). Unset: the embedded PostgreSQL 18 + "
        "pgvector under MNEMO_DATA_DIR/pgdata.",
        DATABASE,
        example="postgresql://user:pass@localhost:5432/mnemo",
    ),
    Setting(
        "DATABASE_POOL_MIN_SIZE",
        "int",
        2,
        "psycopg 3 pool per web process: connections kept open (0 turns the pool off).",
        DATABASE,
    ),
    Setting(
        "DATABASE_POOL_MAX_SIZE",
        "int",
        10,
        "Pool ceiling per web process. Keep web processes x this + task workers under the "
        "server's max_connections.",
        DATABASE,
    ),
    Setting(
        "DATABASE_POOL_TIMEOUT",
        "float",
        10.0,
        "Seconds a request waits for a free pooled connection before 503.",
        DATABASE,
    ),
    Setting(
        "DATABASE_PREPARE_THRESHOLD",
        "int",
        2,
        "A search statement run this many times on a connection is prepared there, so the "
        "server plans it once (0: never; behind PgBouncer in transaction mode it needs 1.21 "
        "or later with max_prepared_statements set).",
        DATABASE,
    ),
    Setting(
        "DATABASE_WORKER_CONN_MAX_AGE",
        "int",
        60,
        "Task workers keep one persistent connection each (no pool) for this many seconds.",
        DATABASE,
    ),
    # --- Task queue and caches
    Setting(
        "REDIS_URL",
        "str",
        "",
        "Redis for django-q2's broker and Django's caches (several web nodes or workers). "
        "Unset: the ORM broker and a database cache (one machine).",
        TASKS,
        example="redis://127.0.0.1:6379/0",
    ),
    Setting(
        "Q_WORKERS",
        "int",
        COMPUTED,
        "django-q2 worker processes per cluster.",
        TASKS,
        default_doc="MNEMO_WORKERS, else 2",
    ),
    Setting("MNEMO_WORKERS", "int", 2, "Older name of Q_WORKERS.", TASKS),
    Setting(
        "MNEMO_TASKS_SYNC",
        "bool",
        False,
        "Run background tasks inline in the request (no worker needed; tests and debugging).",
        TASKS,
    ),
    Setting(
        "MNEMO_JOB_LEASE_SECONDS",
        "int",
        30,
        "Lease of a running import or document job, renewed while a worker runs it; a dead "
        "worker's job is resumed once it runs out (within a minute more).",
        TASKS,
    ),
    # --- Mode, secrets and hosts
    Setting(
        "MNEMO_ENV",
        "str",
        "local",
        "`production` refuses to start without SECRET_KEY and MNEMO_ENCRYPTION_KEYS; `local` "
        "generates both under MNEMO_DATA_DIR.",
        SECURITY,
    ),
    Setting("SECRET_KEY", "str", "", "Django's secret key (generated in local mode).", SECURITY),
    Setting(
        "MNEMO_ENCRYPTION_KEYS",
        "list",
        [],
        "Fernet keys for message content at rest, comma-separated: the first encrypts, all "
        "decrypt (rotate with `manage.py rotate_keys`). Generated in local mode.",
        SECURITY,
    ),
    Setting("DEBUG", "bool", False, "Django's debug mode (never in production).", SECURITY),
    Setting(
        "ALLOWED_HOSTS",
        "list",
        ["127.0.0.1", "localhost", "[::1]", "testserver"],
        "Host names Mnemo answers to; add yours when serving beyond loopback.",
        SECURITY,
    ),
    Setting(
        "CSRF_TRUSTED_ORIGINS",
        "list",
        [],
        "Origins allowed for browser logins and form posts from another origin.",
        SECURITY,
        example="http://192.168.1.10:8000",
    ),
    Setting(
        "MNEMO_CORS_ORIGINS",
        "list",
        [],
        "Browser apps on other origins allowed to call /api, /v1 and /mcp with a token "
        "(none by default).",
        SECURITY,
        example="https://chat.example.com",
    ),
    Setting(
        "MNEMO_DATA_DIR",
        "path",
        COMPUTED,
        "Where the embedded database, generated secrets, models, uploads and static files live.",
        SECURITY,
        default_doc="var/ in the checkout (the working directory's var/ for an installed package)",
    ),
    Setting("LOG_LEVEL", "str", "INFO", "Root log level.", SECURITY),
    # --- Models
    Setting(
        "OPENAI_API_KEY",
        "str",
        "",
        "Key of an OpenAI-compatible endpoint for chat, summaries, facts and headers.",
        MODELS,
        example="sk-...",
    ),
    Setting(
        "OPENAI_BASE_URL",
        "str",
        "",
        "Base URL of that endpoint (Ollama, vLLM, LM Studio); empty for OpenAI itself.",
        MODELS,
        example="http://localhost:11434/v1",
    ),
    Setting(
        "LLM_PROVIDER",
        "str",
        COMPUTED,
        "`openai` (the endpoint above) or `local` (the deterministic offline summarizer and "
        "extractor; the chat says no model is configured).",
        MODELS,
        default_doc="openai when OPENAI_API_KEY or OPENAI_BASE_URL is set, else local",
    ),
    Setting("LLM_MODEL", "str", "gpt-4o-mini", "Model for summaries, facts and headers.", MODELS),
    Setting(
        "LLM_JSON_MODE",
        "str",
        "json_schema",
        "Structured output: `json_schema`, or `json_object` for servers without schemas.",
        MODELS,
    ),
    Setting("LLM_TIMEOUT_SECONDS", "float", 60.0, "Timeout of one model call.", MODELS),
    Setting("LLM_MAX_RETRIES", "int", 2, "Retries of a failed model call.", MODELS),
    Setting(
        "EMBEDDING_PROVIDER",
        "str",
        "local",
        "`local` (all-MiniLM-L6-v2, offline) or `openai` (the endpoint above). After changing "
        "the model run `manage.py reembed`.",
        MODELS,
    ),
    Setting(
        "EMBEDDING_MODEL",
        "str",
        COMPUTED,
        "Embedding model name.",
        MODELS,
        default_doc="all-MiniLM-L6-v2 (local), text-embedding-3-small (openai)",
    ),
    Setting(
        "EMBEDDING_DIMENSIONS",
        "int",
        COMPUTED,
        "Vector size of that model.",
        MODELS,
        default_doc="384 (local), 1536 (openai)",
    ),
    Setting("EMBEDDING_BATCH_SIZE", "int", 64, "Texts per embedding call.", MODELS),
    # --- Local embedder
    Setting(
        "EMBEDDING_BACKEND",
        "str",
        "onnx",
        "Local embedder runtime: `onnx` (no torch at run time) or `torch`.",
        EMBEDDER,
    ),
    Setting(
        "MNEMO_MODELS_DIR",
        "path",
        COMPUTED,
        "Where the exported ONNX graphs are cached (read-only is fine: an image can carry "
        "them; a cache from another CPU is measured again at start).",
        EMBEDDER,
        default_doc="MNEMO_DATA_DIR/models",
    ),
    Setting(
        "EMBEDDING_ONNX_PARITY_MIN_COSINE",
        "float",
        0.99,
        "The first ONNX graph (int8, int8-u8u8, fp32) whose lowest cosine to torch on this CPU "
        "reaches this serves; fp32 serves when no int8 graph does.",
        EMBEDDER,
    ),
    Setting(
        "EMBEDDING_ONNX_THREADS",
        "int",
        1,
        "ONNX Runtime intra-op threads per forward pass (passes already run side by side).",
        EMBEDDER,
    ),
    Setting(
        "EMBEDDING_ONNX_SINGLE_TEXT_THREADS",
        "int",
        COMPUTED,
        "Intra-op threads for one long text on the int8-u8u8 and fp32 graphs.",
        EMBEDDER,
        default_doc="one per core, at most 4",
    ),
    Setting(
        "EMBEDDING_TORCH_THREADS",
        "int",
        1,
        "torch intra-op threads (EMBEDDING_BACKEND=torch; 0 = one per core).",
        EMBEDDER,
    ),
    Setting(
        "EMBEDDING_WORKERS",
        "int",
        COMPUTED,
        "Local forward passes run side by side, both backends.",
        EMBEDDER,
        default_doc="one per core, at most 4",
    ),
    # --- Limits and uploads
    Setting(
        "MNEMO_MAX_BODY_BYTES",
        "int",
        1024 * 1024,
        "Request bodies over this get 413 (uploads have their own limit).",
        LIMITS,
    ),
    Setting(
        "MNEMO_MAX_UPLOAD_BYTES",
        "int",
        512 * 1024 * 1024,
        "Largest chat-export upload.",
        LIMITS,
    ),
    Setting(
        "MNEMO_UPLOAD_DIR",
        "path",
        COMPUTED,
        "Where uploads wait for their job (shared by worker nodes); a full disk answers 507.",
        LIMITS,
        default_doc="MNEMO_DATA_DIR/uploads",
    ),
    Setting(
        "MNEMO_ARCHIVE_MAX_BYTES",
        "int",
        2 * 1024 * 1024 * 1024,
        "Uncompressed total of a zip archive in an import (413 above).",
        LIMITS,
    ),
    Setting("MNEMO_ARCHIVE_MAX_ENTRIES", "int", 10_000, "Members of one zip archive.", LIMITS),
    Setting(
        "MNEMO_ARCHIVE_MAX_RATIO",
        "int",
        100,
        "Largest uncompressed/compressed ratio of one archive member over 1 MiB.",
        LIMITS,
    ),
    Setting(
        "MNEMO_KEEP_UPLOADS",
        "bool",
        False,
        "Keep uploaded files after their import has run (debugging).",
        LIMITS,
    ),
    Setting(
        "MNEMO_MAX_DOCUMENT_BYTES",
        "int",
        10 * 1024 * 1024,
        "Largest document for /api/v1/knowledge/ingest (413 above).",
        LIMITS,
    ),
    # --- Sessions and memory
    Setting(
        "MNEMO_STALE_SESSION_MINUTES",
        "int",
        30,
        "Idle sessions close (and are summarized) after this; the worker looks every 5 minutes.",
        MEMORY,
    ),
    Setting("MNEMO_RETENTION_DAYS", "int", 30, "Days closed sessions' raw logs are kept.", MEMORY),
    Setting(
        "MNEMO_CONSOLIDATION_TOKENS",
        "int",
        4000,
        "A session past this many tokens gets a running summary.",
        MEMORY,
    ),
    Setting(
        "MNEMO_OPT_OUT_USERNAMES",
        "list",
        [],
        "Users whose chats are never remembered.",
        MEMORY,
        example="alice,bob",
    ),
    Setting(
        "MNEMO_FACT_DUPLICATE_SIMILARITY",
        "float",
        0.92,
        "Commit to Memory: a new fact this close (cosine) to a stored one is a duplicate.",
        MEMORY,
    ),
    Setting(
        "MNEMO_INLINE_HEADER_BUDGET_SECONDS",
        "float",
        1.5,
        "Time a chat turn may spend on the model's header of its exchange before the "
        "offline header is used.",
        MEMORY,
    ),
    Setting(
        "MNEMO_EMBED_AFTER_RESPONSE",
        "bool",
        True,
        "Embed a message's memory items just after the response (0: in the request).",
        MEMORY,
    ),
    Setting("MNEMO_SESSION_SUMMARY_MAX_CHARS", "int", 800, "Size of a session's digest.", MEMORY),
    Setting(
        "MNEMO_RECENT_WINDOW_DAYS",
        "int",
        28,
        "Sessions within this many days of the user's newest form the recent rollup.",
        MEMORY,
    ),
    Setting("MNEMO_ROLLUP_RECENT_MAX_CHARS", "int", 800, "Size of the recent rollup.", MEMORY),
    Setting("MNEMO_ROLLUP_HISTORY_MAX_CHARS", "int", 600, "Size of the history rollup.", MEMORY),
    Setting(
        "MNEMO_BUCKETS",
        "list",
        ["PERSONAL_LIFE", "CREATOR", "PROJECTS", "OTHER"],
        "Knowledge buckets every memory is filed in; the last is the fallback.",
        MEMORY,
    ),
    Setting(
        "MNEMO_ENTITY_SIMILARITY",
        "float",
        0.9,
        "Cosine of two entity names' embeddings over which they merge.",
        MEMORY,
    ),
    Setting(
        "MNEMO_ENTITY_TASKS",
        "bool",
        True,
        "Background entity work after a write (name embeddings, the model's extraction).",
        MEMORY,
    ),
    Setting(
        "MNEMO_PROFILE_ENABLED",
        "bool",
        True,
        "Learn the user profile from messages, commits and imports (off: only entries the "
        "user adds).",
        MEMORY,
    ),
    Setting(
        "MNEMO_PROFILE_MODEL",
        "bool",
        True,
        "With a model configured, the model also reads each user message for the profile.",
        MEMORY,
    ),
    # --- OpenAI-compatible endpoint
    Setting(
        "MNEMO_GATEWAY_MIN_USER_TURNS",
        "int",
        1,
        "The context pack is injected from this user turn of a conversation on.",
        GATEWAY,
    ),
    Setting(
        "MNEMO_GATEWAY_MODELS",
        "list",
        [],
        "Models /v1/models lists (default: the upstream's own list).",
        GATEWAY,
        example="gpt-4o-mini,gpt-4o",
    ),
    Setting(
        "MNEMO_GATEWAY_CHAT_ID_HEADERS",
        "list",
        ["X-Mnemo-Conversation-Id", "X-OpenWebUI-Chat-Id"],
        "Headers a chat app puts its own chat id in (the first present wins): one chat, one "
        "session.",
        GATEWAY,
    ),
    # --- Webhooks
    Setting(
        "MNEMO_WEBHOOK_TIMEOUT_SECONDS",
        "float",
        10.0,
        "Timeout of one webhook delivery request.",
        WEBHOOKS,
    ),
    Setting(
        "MNEMO_WEBHOOK_RETRY_SECONDS",
        "list",
        ["10", "30", "60", "120", "300", "900", "1800", "3600", "7200", "14400", "28800", "28800"],
        "Waits between a failed delivery's attempts (about a day in all); then the endpoint is "
        "disabled with the reason.",
        WEBHOOKS,
    ),
    Setting(
        "MNEMO_WEBHOOK_ALLOW_PRIVATE",
        "bool",
        True,
        "Allow endpoints on private or loopback addresses (0 refuses them when registered).",
        WEBHOOKS,
    ),
    # --- Metrics
    Setting(
        "MNEMO_METRICS_TOKEN",
        "str",
        "",
        "GET /metrics answers `Authorization: Bearer <this>`.",
        METRICS,
    ),
    Setting(
        "MNEMO_METRICS_ALLOW",
        "list",
        [],
        "... or a scraper address listed here; with neither set every scrape is refused.",
        METRICS,
        example="127.0.0.1",
    ),
    Setting(
        "PROMETHEUS_MULTIPROC_DIR",
        "path",
        COMPUTED,
        "Where the processes of one `serve` write their samples (prometheus_client's "
        "multi-process mode).",
        METRICS,
        default_doc="a folder per run under MNEMO_DATA_DIR, set by `manage.py serve`",
    ),
    # --- Serving
    Setting(
        "WEB_WORKERS",
        "int",
        1,
        "uvicorn processes sharing the port (`manage.py serve --web-workers`).",
        SERVING,
    ),
)

TABLE: dict[str, Setting] = {entry.name: entry for entry in SETTINGS}

_READERS = {
    "str": env_str,
    "bool": env_bool,
    "int": env_int,
    "float": env_float,
    "list": env_list,
}


def setting(name: str, default: object = COMPUTED):
    """The value of setting `name` from the environment, parsed by its type in the table.

    `default` is required for (and only for) a setting whose table default is COMPUTED: the
    caller works it out. A name not in the table raises KeyError: document it first.
    """
    entry = TABLE[name]
    if (entry.default is COMPUTED) != (default is not COMPUTED):
        raise TypeError(f"{name}: pass a default exactly when the table's default is computed")
    value = entry.default if default is COMPUTED else default
    if entry.kind == "path":
        return Path(env_str(name, str(value)))
    if entry.kind == "list":
        return env_list(name, list(value))
    return _READERS[entry.kind](name, value)
