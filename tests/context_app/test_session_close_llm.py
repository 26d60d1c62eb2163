"""Closing with a model configured: JSON digest and title, usage, redaction, retries on failure."""

from __future__ import annotations

import ast

import pytest
from django_q.models import Schedule

from context_app.models import SessionSummary, SessionTag
from context_app.tasks import session_close_task
from ingestion_app.models import MemoryItem
from memory_site.task_paths import SESSION_CLOSE_TASK
from sessions_app.models import ChatSession, UsageLog
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db

TURNS = [
    ("user", "I want to learn to bake sourdough bread. My email is alice@example.com."),
    ("assistant", "Start with a 75% hydration dough and a mature starter."),
    ("user", "My sourdough starter smells like acetone, is that bad?"),
    ("assistant", "It is hungry: feed it twice a day at a 1:1:1 ratio."),
]


def digest_responder(body):
    schema_name = body["response_format"].get("json_schema", {}).get("name")
    if schema_name == "session_digest":
        return {
            "points": [
                "- The user is learning to bake sourdough bread.",
                "The user's starter smelled of acetone; advised feeding it twice daily.",
                "",
                42,
            ],
            "title": '"Sourdough Starter Troubleshooting."',
        }
    return {
        "chunks": [{"index": 0, "header": "A sourdough baking exchange.", "topics": ["sourdough"]}]
    }


@pytest.fixture
def closing_session(user, fake_openai):
    fake_openai.json_responder = digest_responder
    session = open_session(user)
    for role, content in TURNS:
        add_message(session, role, content)
    ChatSession.objects.filter(id=session.id).update(status="closing")
    return session


def test_the_model_writes_digest_and_title_as_json(closing_session, fake_openai):
    assert session_close_task(str(closing_session.id)) == "closed"

    session = ChatSession.objects.get(id=closing_session.id)
    assert session.status == "closed"
    assert session.title == "Sourdough Starter Troubleshooting"
    summary = SessionSummary.objects.get(session=session)
    assert summary.summary == (
        "- The user is learning to bake sourdough bread.\n"
        "- The user's starter smelled of acetone; advised feeding it twice daily."
    )
    assert summary.model == "gpt-4o-mini"
    # Tags come from the user's own words, with or without a model.
    assert SessionTag.objects.filter(session=session, tag="sourdough").exists()
    usage = UsageLog.objects.get(session=session, kind="summary")
    assert usage.model == "gpt-4o-mini" and usage.tokens_in > 0 and usage.tokens_out > 0
    digest_requests = [
        body
        for body in fake_openai.bodies("/chat/completions")
        if body.get("response_format", {}).get("json_schema", {}).get("name") == "session_digest"
    ]
    assert len(digest_requests) == 1
    assert "acetone" in digest_requests[0]["messages"][1]["content"]
    # Only redacted text leaves the service.
    assert "alice@example.com" not in fake_openai.all_text_sent()


def test_a_failing_model_leaves_the_session_closing_with_the_error_then_retries(
    closing_session, fake_openai
):
    fake_openai.fail_count = 1_000

    assert session_close_task(str(closing_session.id)) == "failed"

    session = ChatSession.objects.get(id=closing_session.id)
    assert session.status == "closing"
    assert session.close_attempts == 1
    assert "attempt 1/3 failed" in session.close_error
    assert "retry scheduled" in session.close_error
    # Never half-written.
    assert not SessionSummary.objects.filter(session=session).exists()
    assert not SessionTag.objects.filter(session=session).exists()
    assert not MemoryItem.objects.filter(chat_session=session, source="summary").exists()
    assert session.title == ""
    retry = Schedule.objects.get(func=SESSION_CLOSE_TASK)
    assert retry.schedule_type == Schedule.ONCE
    assert ast.literal_eval(retry.args) == str(session.id)

    # The model recovers; the scheduled retry (run here as the scheduler would) closes it.
    fake_openai.fail_count = 0
    assert session_close_task(ast.literal_eval(retry.args)) == "closed"
    session.refresh_from_db()
    assert session.status == "closed"
    assert session.close_error == ""
    assert session.close_attempts == 2
    assert SessionSummary.objects.filter(session=session).count() == 1


def test_a_model_still_failing_on_the_last_attempt_closes_with_the_local_summary(
    closing_session, fake_openai, settings
):
    fake_openai.fail_count = 1_000
    max_attempts = settings.Q_CLUSTER["max_attempts"]

    for _ in range(max_attempts - 1):
        assert session_close_task(str(closing_session.id)) == "failed"
    assert ChatSession.objects.get(id=closing_session.id).status == "closing"

    assert session_close_task(str(closing_session.id)) == "closed"

    session = ChatSession.objects.get(id=closing_session.id)
    assert session.status == "closed"
    assert session.close_error.startswith(
        f"closed with the local summarizer after {max_attempts} failed model attempts"
    )
    summary = SessionSummary.objects.get(session=session)
    assert summary.summary.strip()
    assert summary.model == "local"
    assert MemoryItem.objects.filter(chat_session=session, source="summary").count() == 1
    assert Schedule.objects.filter(func=SESSION_CLOSE_TASK).count() == max_attempts - 1


def test_a_model_answer_without_points_fails_until_the_last_attempt(
    closing_session, fake_openai, settings
):
    # A model that cannot give the structured answer (no json_schema support): the session
    # still closes, with the local summary, instead of staying `closing`.
    fake_openai.json_responder = lambda body: {"points": [], "title": ""}
    for _ in range(settings.Q_CLUSTER["max_attempts"] - 1):
        assert session_close_task(str(closing_session.id)) == "failed"

    assert session_close_task(str(closing_session.id)) == "closed"
    assert "no summary points" in ChatSession.objects.get(id=closing_session.id).close_error


def test_a_model_answer_without_points_is_a_failure_not_an_empty_summary(
    closing_session, fake_openai
):
    fake_openai.json_responder = lambda body: {"points": [], "title": ""}

    assert session_close_task(str(closing_session.id)) == "failed"

    session = ChatSession.objects.get(id=closing_session.id)
    assert session.status == "closing"
    assert "no summary points" in session.close_error
