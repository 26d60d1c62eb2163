"""Original text is stored encrypted: the database column never holds the plaintext."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.db import connection

from ingestion_app.models import MemoryItem
from memory_site.crypto import EncryptedTextField
from memory_site.management.commands.rotate_keys import encrypted_columns
from sessions_app.models import Message
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db

SECRET_SENTENCE = "My card is 4111 1111 1111 1111 and my mail is jane.roe@example.org"


def raw_column(table: str, column: str, pk) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "{column}" FROM "{table}" WHERE id = %s', [pk])
        return cursor.fetchone()[0]


def test_message_content_column_holds_a_token_not_the_text(user):
    message = add_message(open_session(user), "user", SECRET_SENTENCE)
    stored = raw_column("sessions_app_message", "content", message.id)
    assert "4111" not in stored and "jane.roe" not in stored and "example.org" not in stored
    assert (
        Fernet(settings.MNEMO_ENCRYPTION_KEYS[0].encode()).decrypt(stored.encode()).decode()
        == SECRET_SENTENCE
    )
    assert Message.objects.get(id=message.id).content == SECRET_SENTENCE
    # The sanitized copy is what stays readable in the database.
    sanitized = raw_column("sessions_app_message", "content_sanitized", message.id)
    assert "4111" not in sanitized and "jane.roe@example.org" not in sanitized


def test_rag_store_raw_content_column_is_encrypted(user):
    item = MemoryItem.objects.create(
        user=user,
        source=MemoryItem.Source.DOCUMENT,
        content="mail is [EMAIL]",
        raw_content=SECRET_SENTENCE,
    )
    stored = raw_column("rag_store", "raw_content", item.id)
    assert "jane.roe" not in stored and "4111" not in stored
    assert MemoryItem.objects.get(id=item.id).raw_content == SECRET_SENTENCE


def test_every_encrypted_column_in_the_schema_holds_no_plaintext(user):
    """Covers encrypted columns other apps add later: fill each one and read the raw value."""
    add_message(open_session(user), "user", SECRET_SENTENCE)
    MemoryItem.objects.create(
        user=user, source=MemoryItem.Source.DOCUMENT, content="x", raw_content=SECRET_SENTENCE
    )
    columns = encrypted_columns()
    assert {(m._meta.label, f.name) for m, f in columns} >= {
        ("sessions_app.Message", "content"),
        ("ingestion_app.MemoryItem", "raw_content"),
    }
    with connection.cursor() as cursor:
        for model, field in columns:
            assert isinstance(field, EncryptedTextField)
            cursor.execute(
                f'SELECT count(*) FROM "{model._meta.db_table}" WHERE "{field.column}" LIKE %s',
                ["%jane.roe%"],
            )
            assert cursor.fetchone()[0] == 0, f"{model._meta.label}.{field.name} holds plaintext"


def test_a_value_written_under_an_unknown_key_fails_loudly(user, settings):
    message = add_message(open_session(user), "user", "hello")
    settings.MNEMO_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    with pytest.raises(ValueError, match="cannot be decrypted"):
        Message.objects.get(id=message.id)


def _run_check(env_overrides: dict, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MNEMO_ENCRYPTION_KEYS", "SECRET_KEY", "MNEMO_ENV")
    }
    env.update({"DJANGO_SETTINGS_MODULE": "memory_site.settings", "MNEMO_DATA_DIR": str(tmp_path)})
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_to_start_without_encryption_keys(tmp_path):
    result = _run_check({"MNEMO_ENV": "production", "SECRET_KEY": "s" * 50}, tmp_path)
    assert result.returncode != 0
    assert "started" not in result.stdout
    assert "MNEMO_ENCRYPTION_KEYS must be set when MNEMO_ENV=production" in result.stderr
    assert not (tmp_path / "encryption_key").exists()


def test_local_mode_generates_a_key_under_the_data_dir_and_says_so(tmp_path):
    # DATABASE_URL keeps the child process from starting a second embedded server in tmp_path.
    result = _run_check(
        {"MNEMO_ENV": "local", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}, tmp_path
    )
    assert result.returncode == 0, result.stderr
    key_file = tmp_path / "encryption_key"
    assert key_file.exists()
    Fernet(key_file.read_text().strip().encode())  # a valid Fernet key
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    # On stderr: stdout is the protocol channel of `manage.py mcp` (stdio).
    assert "generated a local encryption_key" in result.stderr
