"""An external PostgreSQL (DATABASE_URL): its Django settings and the start-up check.

The embedded server (memory_site/embedded_db.py) is the one-machine default. With DATABASE_URL
Mnemo talks to any PostgreSQL that has pgvector, over TCP with password auth, through a
psycopg 3 connection pool in each web process (a TCP connection with SCRAM auth costs several
milliseconds; Django would otherwise open one per request).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_POSTGRES_SCHEMES = {"postgres", "postgresql", "pgsql", "postgis"}


def redacted_url(url: str) -> str:
    """The URL without its password, for error messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def external_database_settings(
    url: str, *, pool_min_size: int, pool_max_size: int, pool_timeout: float
) -> dict:
    """A Django DATABASES entry for DATABASE_URL; ImproperlyConfigured naming what is wrong.

    ``pool_max_size`` 0 turns the pool off (one connection per request, or per task in a
    worker). The pool is a per-process object, so forked django-q2 workers must not inherit
    one: ``worker_database_settings`` turns it off there.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid URL ({exc}).") from exc
    if parts.scheme not in _POSTGRES_SCHEMES:
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a PostgreSQL URL (postgresql://user:password@host:5432/name), "
            f"got scheme {parts.scheme!r} in {redacted_url(url)}."
        )
    if not parts.path.strip("/"):
        raise ImproperlyConfigured(
            f"DATABASE_URL names no database (…/name at the end): {redacted_url(url)}."
        )
    database = dj_database_url.parse(url, conn_max_age=0)
    database["ENGINE"] = "django.db.backends.postgresql"
    options = database.setdefault("OPTIONS", {})
    if pool_max_size > 0:
        options["pool"] = pool_options(
            pool_min_size=pool_min_size, pool_max_size=pool_max_size, pool_timeout=pool_timeout
        )
    return database


def pool_options(*, pool_min_size: int, pool_max_size: int, pool_timeout: float) -> dict:
    """Django's psycopg 3 pool option (external or embedded server); refuses min > max."""
    if pool_min_size > pool_max_size:
        raise ImproperlyConfigured(
            f"DATABASE_POOL_MIN_SIZE ({pool_min_size}) exceeds DATABASE_POOL_MAX_SIZE "
            f"({pool_max_size})."
        )
    return {"min_size": pool_min_size, "max_size": pool_max_size, "timeout": pool_timeout}


def worker_database_settings(database: dict, *, conn_max_age: int) -> dict:
    """The same database for a django-q2 cluster: no pool, a persistent connection instead.

    The cluster forks its workers; a pool (and its background threads and sockets) inherited
    across fork would hand two processes the same server connection.
    """
    options = {key: value for key, value in database.get("OPTIONS", {}).items() if key != "pool"}
    return database | {"OPTIONS": options, "CONN_MAX_AGE": conn_max_age}


def database_preflight(alias: str = "default") -> list[str]:
    """Connect and check what Mnemo needs; a list of plain-language problems (empty = fine).

    Names the server (never the password) and what is missing: unreachable host, refused
    password, missing database, or a server without the pgvector extension.
    """
    import psycopg
    from django.db import connections

    connection = connections[alias]
    settings_dict = connection.settings_dict
    where = (
        f"{settings_dict.get('USER') or '?'}@{settings_dict.get('HOST') or 'local socket'}"
        f":{settings_dict.get('PORT') or 5432}/{settings_dict.get('NAME')}"
    )
    # A direct connection, not the pool: the pool retries in the background and only says
    # "couldn't get a connection" after its timeout, hiding the server's reason.
    params = connection.get_connection_params()
    params.setdefault("connect_timeout", 10)
    for django_only in ("cursor_factory", "context"):
        params.pop(django_only, None)
    try:
        with psycopg.connect(**params) as direct:
            installed, available = direct.execute(
                "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
                " (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')"
            ).fetchone()
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())
        return [f"cannot connect to PostgreSQL at {where}: {reason}"]
    if installed is None and available is None:
        return [
            f"the PostgreSQL server at {where} has no pgvector extension: install pgvector on "
            "the server (package postgresql-<version>-pgvector, or the pgvector/pgvector image; "
            "managed services: enable the 'vector' extension) and run migrate again"
        ]
    return []
