"""Starting against an external PostgreSQL: pool settings from the environment, and one clear
line (naming what is missing, never the password) when the URL is wrong or pgvector is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from memory_site.database import (
    external_database_settings,
    redacted_url,
    worker_database_settings,
)
from tests.deploy.cluster import BASE_DIR
from tests.deploy.servers import PostgresTcpServer, free_port

POOL = {"pool_min_size": 2, "pool_max_size": 8, "pool_timeout": 5.0}


def test_database_url_gives_a_pooled_tcp_connection():
    database = external_database_settings("postgresql://app:s3cret@db.internal:6543/mnemo", **POOL)
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["HOST"], database["PORT"], database["NAME"]) == ("db.internal", 6543, "mnemo")
    assert (database["USER"], database["PASSWORD"]) == ("app", "s3cret")
    assert database["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 8, "timeout": 5.0}
    assert database["CONN_MAX_AGE"] == 0  # Django refuses persistent connections with a pool


def test_pool_size_zero_turns_the_pool_off():
    database = external_database_settings(
        "postgres://app:pw@127.0.0.1/mnemo", **(POOL | {"pool_max_size": 0})
    )
    assert "pool" not in database["OPTIONS"]


def test_task_workers_get_no_pool_but_a_persistent_connection():
    database = external_database_settings("postgres://app:pw@127.0.0.1/mnemo", **POOL)
    worker = worker_database_settings(database, conn_max_age=60)
    assert "pool" not in worker["OPTIONS"] and worker["CONN_MAX_AGE"] == 60
    assert "pool" in database["OPTIONS"]  # the web settings are left as they were


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://app:pw@127.0.0.1/mnemo", "must be a PostgreSQL URL"),
        ("postgresql://app:pw@127.0.0.1:5432", "names no database"),
        ("postgresql://app:pw@127.0.0.1:port/mnemo", "not a valid URL"),
    ],
)
def test_a_malformed_database_url_is_refused_by_name(url, message):
    with pytest.raises(ImproperlyConfigured, match=message) as raised:
        external_database_settings(url, **POOL)
    assert ":pw@" not in str(raised.value)


def test_pool_smaller_than_its_minimum_is_refused():
    with pytest.raises(ImproperlyConfigured, match="DATABASE_POOL_MIN_SIZE"):
        external_database_settings(
            "postgres://a:b@127.0.0.1/m", **(POOL | {"pool_min_size": 9, "pool_max_size": 4})
        )


def test_password_is_hidden_in_messages():
    assert redacted_url("postgresql://app:p%40ss@h:1/d") == "postgresql://app:***@h:1/d"


def manage(*args: str, database_url: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env |= {"DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "memory_site.settings"}
    env.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def postgres():
    server = PostgresTcpServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def postgres_without_pgvector():
    server = PostgresTcpServer(with_pgvector=False).start()
    yield server
    server.stop()


def test_wrong_password_stops_migrate_with_the_servers_reason(postgres):
    result = manage("migrate", "--noinput", database_url=postgres.url_for("mnemo", password="nope"))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"cannot connect to PostgreSQL at mnemo@127.0.0.1:{postgres.port}/mnemo" in output
    assert "password authentication failed" in output
    assert "nope" not in output


def test_unknown_database_is_named(postgres):
    result = manage("check", "--database", "default", database_url=postgres.url_for("nosuch"))
    assert result.returncode != 0
    assert 'database "nosuch" does not exist' in result.stdout + result.stderr


def test_server_without_pgvector_is_named_at_migrate(postgres_without_pgvector):
    result = manage("migrate", "--noinput", database_url=postgres_without_pgvector.url)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "has no pgvector extension" in output
    assert postgres_without_pgvector.password not in output


def test_serve_refuses_to_start_on_a_wrong_url(postgres):
    result = manage(
        "serve",
        "--port",
        str(free_port()),
        database_url=postgres.url_for("mnemo", password="nope"),
        timeout=60,
    )
    assert result.returncode != 0
    assert "Mnemo cannot start: cannot connect to PostgreSQL" in result.stderr


def test_a_working_url_passes_the_check(postgres):
    result = manage("check", "--database", "default", database_url=postgres.url)
    assert result.returncode == 0, result.stdout + result.stderr


def settings_seen_with(env: dict[str, str]) -> dict:
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({'caches': {k: v['BACKEND'] for k, v in s.CACHES.items()}, "
        "'broker': sorted(set(s.Q_CLUSTER) & {'redis', 'orm'}), "
        "'workers': s.Q_CLUSTER['workers']}))"
    )
    base = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    base.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=base | {"DJANGO_SETTINGS_MODULE": "memory_site.settings"} | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_redis_url_moves_the_broker_and_the_caches_to_redis():
    seen = settings_seen_with({"REDIS_URL": "redis://127.0.0.1:6399/0", "Q_WORKERS": "5"})
    assert seen["broker"] == ["redis"]
    assert set(seen["caches"].values()) == {"django.core.cache.backends.redis.RedisCache"}
    assert seen["workers"] == 5
    without = settings_seen_with({})
    assert without["broker"] == ["orm"]
    assert "django.core.cache.backends.redis.RedisCache" not in without["caches"].values()
