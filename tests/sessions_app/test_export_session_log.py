"""`manage.py export_session_log` writes the reference's raw log, and it reads back."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from ingestion_app.parsers.markdown_log import parse
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db

AT = datetime(2026, 3, 31, 14, 23, tzinfo=UTC)


@pytest.fixture
def session(user):
    session = open_session(user)
    add_message(session, "system", "You are terse.", created_at=AT)
    add_message(session, "user", "Switch me to the small model.\nIt is cheaper.", created_at=AT)
    add_message(
        session,
        "assistant",
        "Done: you are on the small model.",
        model="gpt-4o-mini",
        created_at=AT + timedelta(seconds=5),
    )
    add_message(
        session, "user", "My email is bob@example.com", created_at=AT + timedelta(minutes=2)
    )
    return session


def export(*args) -> str:
    out = io.StringIO()
    call_command("export_session_log", *args, stdout=out)
    return out.getvalue()


def test_the_log_has_one_block_per_turn_in_the_reference_format(session):
    text = export(str(session.id))

    assert text.startswith("---\n**Timestamp:** 2026-03-31T14:23:00Z\n**Model:** gpt-4o-mini\n")
    assert "**Turn:** 1\n**User:**\nSwitch me to the small model.\nIt is cheaper.\n" in text
    assert "**Assistant:**\nDone: you are on the small model.\n" in text
    assert "**Timestamp:** 2026-03-31T14:25:00Z\n**Model:** unknown\n**Turn:** 2\n" in text
    assert "You are terse." not in text  # system prompts are not exchanges
    # The raw log is the audit trail: full original text unless --sanitized.
    assert "bob@example.com" in text
    assert "bob@example.com" not in export(str(session.id), "--sanitized")


def test_the_log_reads_back_with_the_session_log_parser(session, tmp_path):
    out = export(str(session.id), "--output", str(tmp_path))
    path = tmp_path / f"{session.id}.md"
    assert f"wrote {path}" in out

    (conversation,) = parse(path, source_file=path.name)

    assert conversation.conversation_id == str(session.id)
    assert [p.user_text for p in conversation.pairs] == [
        "Switch me to the small model.\nIt is cheaper.",
        "My email is bob@example.com",
    ]
    assert conversation.pairs[0].assistant_text == "Done: you are on the small model."
    assert conversation.pairs[0].model == "gpt-4o-mini"
    assert conversation.pairs[0].user_at == AT


def test_an_unknown_session_is_an_error(db):
    with pytest.raises(CommandError):
        export("00000000-0000-0000-0000-000000000000")
    with pytest.raises(CommandError):
        export("not-a-uuid")
