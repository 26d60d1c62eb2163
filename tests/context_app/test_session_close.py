"""Closing a session over the API writes durable memory once: summary, tags, title, rollups."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from context_app.models import SessionSummary, SessionTag, UserChatSummary
from context_app.services.summaries import turns_of
from context_app.tasks import session_close_task
from ingestion_app.models import MemoryItem
from sessions_app.models import ChatSession, Message
from sessions_app.tasks import close_stale_sessions_task
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db

JAPAN_TRIP = [
    ("user", "I am planning a trip to Japan in April, mostly Tokyo and Kyoto."),
    ("assistant", "April is cherry blossom season, so book hotels in Kyoto early."),
    ("user", "Should I buy the Japan Rail Pass for the Tokyo to Kyoto trip?"),
    ("assistant", "For a single round trip the Japan Rail Pass rarely pays off; buy tickets."),
    ("user", "My budget for Kyoto hotels is about 150 dollars a night."),
    ("assistant", "That budget works for a good ryokan in Kyoto outside the peak week."),
]


def post(api, path, body):
    return api.post(f"/api/v1/{path}", body, format="json")


def chat(api, session_id, turns):
    for role, content in turns:
        response = post(
            api, "chat/messages", {"session_id": session_id, "role": role, "content": content}
        )
        assert response.status_code == 201, response.content


def close(api, session_id, capture):
    with capture(execute=True):
        response = post(api, "chat/close", {"session_id": session_id})
    assert response.status_code == 202, response.content
    return response


def test_close_writes_summary_tags_title_and_rollups(api, user, django_capture_on_commit_callbacks):
    session_id = post(api, "chat/new", {}).json()["session_id"]
    chat(api, session_id, JAPAN_TRIP)

    close(api, session_id, django_capture_on_commit_callbacks)

    detail = api.get(f"/api/v1/chat/sessions/{session_id}").json()
    assert detail["status"] == "closed"
    assert detail["closed_at"]
    summary = detail["summary"]["text"]
    assert summary.startswith("- ")
    assert "Kyoto" in summary
    # A digest, not a replay of the transcript.
    assert len(summary) < sum(len(text) for _, text in JAPAN_TRIP) / 2 + 200
    assert detail["summary"]["token_estimate"] > 0
    tags = [tag["tag"] for tag in detail["tags"]]
    assert "kyoto" in tags
    assert all(0 < tag["confidence"] <= 1 for tag in detail["tags"])
    assert not {"i", "am", "the", "about", "should", "thanks"} & set(tags)
    assert 3 <= len(detail["title"].split()) <= 5

    searchable = MemoryItem.objects.get(
        chat_session_id=session_id, source="summary", metadata__kind="session_summary"
    )
    assert searchable.content == summary
    assert searchable.embedding is not None and len(searchable.embedding) == 384

    recent = UserChatSummary.objects.get(user=user, app_id="default", kind="recent")
    assert recent.session_count == 1
    assert "Kyoto" in recent.summary
    history = UserChatSummary.objects.get(user=user, app_id="default", kind="history")
    assert history.session_count == 0 and history.summary == ""


def test_a_second_close_makes_no_second_summary(api, django_capture_on_commit_callbacks):
    session_id = post(api, "chat/new", {}).json()["session_id"]
    chat(api, session_id, JAPAN_TRIP)
    close(api, session_id, django_capture_on_commit_callbacks)
    first = SessionSummary.objects.get(session_id=session_id)

    second = close(api, session_id, django_capture_on_commit_callbacks)
    assert second.json()["status"] == "closed"
    assert session_close_task(session_id) == "skipped"  # a duplicate delivery of the task

    assert SessionSummary.objects.filter(session_id=session_id).count() == 1
    assert SessionSummary.objects.get(session_id=session_id).updated_at == first.updated_at
    assert (
        MemoryItem.objects.filter(
            chat_session_id=session_id, metadata__kind="session_summary"
        ).count()
        == 1
    )
    assert ChatSession.objects.get(id=session_id).close_attempts == 1


def test_a_session_with_zero_messages_closes_with_no_summary(
    api, user, django_capture_on_commit_callbacks
):
    session_id = post(api, "chat/new", {}).json()["session_id"]
    close(api, session_id, django_capture_on_commit_callbacks)

    detail = api.get(f"/api/v1/chat/sessions/{session_id}").json()
    assert detail["status"] == "closed"
    assert detail["summary"] is None
    assert detail["tags"] == []
    assert detail["title"] == ""
    assert detail["close_error"] == ""
    assert not MemoryItem.objects.filter(chat_session_id=session_id, source="summary").exists()


def test_a_title_given_by_the_client_is_kept(api, django_capture_on_commit_callbacks):
    session_id = post(api, "chat/new", {"title": "Spring holiday"}).json()["session_id"]
    chat(api, session_id, JAPAN_TRIP)
    close(api, session_id, django_capture_on_commit_callbacks)
    assert ChatSession.objects.get(id=session_id).title == "Spring holiday"


def test_stale_sessions_are_closed_by_the_schedule(
    user, settings, django_capture_on_commit_callbacks
):
    stale = open_session(user)
    for role, content in JAPAN_TRIP:
        add_message(stale, role, content)
    fresh = open_session(user)
    add_message(fresh, "user", "What is a good sourdough hydration for beginners?")
    long_ago = timezone.now() - timedelta(minutes=settings.MNEMO_STALE_SESSION_MINUTES + 5)
    ChatSession.objects.filter(id=stale.id).update(
        last_activity_at=long_ago, last_heartbeat_at=long_ago
    )

    with django_capture_on_commit_callbacks(execute=True):
        assert close_stale_sessions_task() == 1

    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert stale.status == "closed"
    assert SessionSummary.objects.filter(session=stale).exists()
    assert SessionTag.objects.filter(session=stale, tag="kyoto").exists()
    assert fresh.status == "open"
    assert not SessionSummary.objects.filter(session=fresh).exists()


def test_messages_that_are_only_greetings_give_no_summary(user, django_capture_on_commit_callbacks):
    session = open_session(user)
    add_message(session, "user", "hi")
    add_message(session, "assistant", "Hello! How can I help?")
    add_message(session, "user", "thanks, bye")
    ChatSession.objects.filter(id=session.id).update(status="closing")

    assert session_close_task(str(session.id)) == "closed"

    session.refresh_from_db()
    assert session.status == "closed"
    assert session.title == ""
    assert not SessionSummary.objects.filter(session=session).exists()
    assert not SessionTag.objects.filter(session=session).exists()


def test_a_chat_apps_task_prompt_and_its_answer_are_not_part_of_the_summary(user):
    session = open_session(user)
    add_message(session, "user", "My sister Anna lives in Lisbon.", run_hooks=False)
    add_message(session, "assistant", "Lovely city.", run_hooks=False)
    add_message(session, "user", "### Task:\nSuggest 3 tags.\n<chat_history>...", run_hooks=False)
    add_message(session, "assistant", '{"tags": ["family"]}', run_hooks=False)
    add_message(session, "user", "She works at a bakery.", run_hooks=False)

    turns = turns_of(list(Message.objects.filter(session=session).order_by("id")))

    assert turns == [
        ("user", "My sister Anna lives in Lisbon."),
        ("assistant", "Lovely city."),
        ("user", "She works at a bakery."),
    ]
