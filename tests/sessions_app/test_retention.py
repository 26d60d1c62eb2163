"""Retention: messages of sessions inactive too long are really deleted; memories stay."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from context_app.models import SessionSummary, SessionTag
from ingestion_app.models import MemoryItem
from sessions_app.models import (
    ChatSession,
    Message,
    RetentionLog,
    UsageLog,
)
from sessions_app.services.retention import retention_purge
from sessions_app.services.usage import usage_record
from sessions_app.tasks import retention_task
from tests.factories import add_message, make_user, open_session

pytestmark = pytest.mark.django_db


def make_session(user, *, inactive_days: float, texts=("hi, I'm at bob@example.com", "noted")):
    session = open_session(user)
    # Hooks off: this test owns every rag_store row of the session, so counts are exact.
    messages = [
        add_message(session, "user" if i % 2 == 0 else "assistant", text, run_hooks=False)
        for i, text in enumerate(texts)
    ]
    ChatSession.objects.filter(id=session.id).update(
        last_activity_at=timezone.now() - timedelta(days=inactive_days)
    )
    chunk = MemoryItem.objects.create(
        user=user,
        chat_session=session,
        source=MemoryItem.Source.CHUNK,
        content=messages[0].content_sanitized,
        raw_content=messages[0].content,
        embedding=[1.0] + [0.0] * (django_settings.EMBEDDING_DIMENSIONS - 1),
        source_message_ids=[m.id for m in messages],
    )
    SessionSummary.objects.create(
        session=session, user=user, summary="User shared contact details."
    )
    SessionTag.objects.create(session=session, user=user, tag="contact", confidence=0.9)
    usage_record(user=user, session=session, model="gpt-4o-mini", tokens_in=100, tokens_out=20)
    return session, messages, chunk


def message_rows(session) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM sessions_app_message WHERE session_id = %s", [session.id]
        )
        return cursor.fetchone()[0]


def test_old_sessions_lose_their_messages_and_keep_their_memories(user, other_user, settings):
    settings.MNEMO_RETENTION_DAYS = 30
    old, old_messages, old_chunk = make_session(user, inactive_days=31)
    other_old, _, _ = make_session(other_user, inactive_days=45)
    recent, recent_messages, recent_chunk = make_session(user, inactive_days=29)

    report = retention_purge()

    assert report.sessions_purged == 2
    assert report.messages_deleted == 4
    assert report.raw_texts_cleared == 2
    assert message_rows(old) == 0 and message_rows(other_old) == 0
    assert message_rows(recent) == 2

    old.refresh_from_db()
    assert old.messages_purged_at is not None
    assert SessionSummary.objects.filter(session=old).exists()
    assert SessionTag.objects.filter(session=old).exists()
    assert UsageLog.objects.filter(session=old).count() == 1

    old_chunk.refresh_from_db()
    assert old_chunk.content == old_messages[0].content_sanitized  # the memory stays searchable
    assert old_chunk.embedding is not None
    assert old_chunk.raw_content == ""  # the original text went with the messages
    recent_chunk.refresh_from_db()
    assert recent_chunk.raw_content == recent_messages[0].content
    recent.refresh_from_db()
    assert recent.messages_purged_at is None

    log = RetentionLog.objects.get(id=report.log_id)
    assert log.sessions_purged == 2 and log.messages_deleted == 4 and log.raw_texts_cleared == 2
    assert log.deleted == {"sessions_app.Message": 4}
    assert set(log.session_ids) == {str(old.id), str(other_old.id)}
    assert log.retention_days == 30


def test_purge_is_idempotent_and_logs_every_run(user):
    make_session(user, inactive_days=40)
    first = retention_purge()
    second = retention_purge()
    assert first.messages_deleted == 2
    assert second.sessions_purged == 0 and second.messages_deleted == 0
    assert RetentionLog.objects.count() == 2


def test_retention_days_setting_is_honoured(user, settings):
    settings.MNEMO_RETENTION_DAYS = 7
    week_old, _, _ = make_session(user, inactive_days=8)
    fresh, _, _ = make_session(user, inactive_days=6)
    retention_purge()
    assert message_rows(week_old) == 0
    assert message_rows(fresh) == 2


def test_zero_days_disables_retention(user, settings):
    settings.MNEMO_RETENTION_DAYS = 0
    session, _, _ = make_session(user, inactive_days=400)
    report = retention_purge()
    assert report.sessions_purged == 0
    assert message_rows(session) == 2
    assert not RetentionLog.objects.exists()


def test_a_purged_session_that_is_still_open_accepts_new_messages(user):
    session, _, _ = make_session(user, inactive_days=60)
    retention_purge()
    message = add_message(session, "user", "back again")
    assert list(Message.objects.filter(session=session)) == [message]
    # Activity moved: the next run leaves the new message alone.
    assert retention_purge().messages_deleted == 0


def test_the_daily_task_runs_the_purge(user):
    session, _, _ = make_session(user, inactive_days=31)
    result = retention_task()
    assert result["sessions_purged"] == 1
    assert result["messages_deleted"] == 2
    assert message_rows(session) == 0


def test_admins_can_read_the_retention_log(user, client):
    make_session(user, inactive_days=31)
    retention_purge()
    admin = make_user("root", staff=True)
    admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    page = client.get("/admin/sessions_app/retentionlog/")
    assert page.status_code == 200
    assert "1 retention log" in page.content.decode()
    assert client.get("/admin/sessions_app/retentionlog/add/").status_code == 403
