"""`manage.py rotate_keys`: after it runs, the old key can be removed and everything still reads."""

from __future__ import annotations

from io import StringIO

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.management import CommandError, call_command
from django.db import connection

from ingestion_app.models import MemoryItem
from sessions_app.models import Message
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db


def new_key() -> str:
    return Fernet.generate_key().decode()


def raw_tokens(table: str, column: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "{column}" FROM "{table}" WHERE "{column}" <> \'\' ORDER BY id')
        return [row[0] for row in cursor.fetchall()]


def rotate(**options) -> str:
    out = StringIO()
    call_command("rotate_keys", stdout=out, **options)
    return out.getvalue()


@pytest.fixture
def old_key(settings):
    key = new_key()
    settings.MNEMO_ENCRYPTION_KEYS = [key]
    return key


def test_rotation_lets_the_old_key_go(user, settings, old_key):
    session = open_session(user)
    texts = [f"message {i}: call me on +44 20 7946 0{i:03d}" for i in range(7)]
    for text in texts:
        add_message(session, "user", text)
    document = MemoryItem.objects.create(
        user=user, source=MemoryItem.Source.DOCUMENT, content="doc", raw_content="original doc text"
    )
    MemoryItem.objects.create(
        user=user, source=MemoryItem.Source.FACT, content="fact without raw text"
    )

    primary = new_key()
    settings.MNEMO_ENCRYPTION_KEYS = [primary, old_key]
    output = rotate(batch_size=3)  # several batches
    assert "sessions_app.Message.content: 7 re-encrypted" in output
    assert "ingestion_app.MemoryItem.raw_content: 1 re-encrypted" in output

    for token in raw_tokens("sessions_app_message", "content") + raw_tokens(
        "rag_store", "raw_content"
    ):
        Fernet(primary.encode()).decrypt(token.encode())
        with pytest.raises(InvalidToken):
            Fernet(old_key.encode()).decrypt(token.encode())

    settings.MNEMO_ENCRYPTION_KEYS = [primary]  # the old key is gone
    assert [m.content for m in Message.objects.filter(session=session).order_by("id")] == texts
    assert MemoryItem.objects.get(id=document.id).raw_content == "original doc text"


def test_rotation_is_idempotent(user, settings, old_key):
    add_message(open_session(user), "user", "first")
    settings.MNEMO_ENCRYPTION_KEYS = [new_key(), old_key]
    assert "total: re-encrypted 1, 0 already current" in rotate()
    before = raw_tokens("sessions_app_message", "content")
    assert "total: re-encrypted 0, 1 already current" in rotate()
    assert raw_tokens("sessions_app_message", "content") == before


def test_dry_run_changes_nothing(user, settings, old_key):
    add_message(open_session(user), "user", "first")
    before = raw_tokens("sessions_app_message", "content")
    settings.MNEMO_ENCRYPTION_KEYS = [new_key(), old_key]
    assert "would re-encrypt 1" in rotate(dry_run=True)
    assert raw_tokens("sessions_app_message", "content") == before


def test_values_no_key_can_read_are_reported_and_fail_the_command(user, settings, old_key):
    add_message(open_session(user), "user", "written under the old key")
    settings.MNEMO_ENCRYPTION_KEYS = [new_key()]  # the old key was dropped too early
    out = StringIO()
    with pytest.raises(CommandError, match="1 values cannot be decrypted"):
        call_command("rotate_keys", stdout=out)
    assert "1 unreadable" in out.getvalue()
