"""Staff see summaries, tags, rollups and chunks in admin, and can re-summarize and rebuild."""

from __future__ import annotations

import pytest

from context_app.models import SessionSummary, SessionTag, UserChatSummary
from context_app.tasks import session_close_task
from sessions_app.models import ChatSession
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def closed_session(user):
    session = open_session(user)
    add_message(session, "user", "I am restoring a 1968 Vespa scooter and need a carburettor.")
    add_message(session, "assistant", "The Dell'Orto SI 20/17 fits most Vespa models of that era.")
    ChatSession.objects.filter(id=session.id).update(status="closing")
    assert session_close_task(str(session.id)) == "closed"
    return session


def test_rollups_summaries_tags_and_chunks_are_listed_and_searchable(staff_client, closed_session):
    pages = {
        "/admin/context_app/userchatsummary/?q=Vespa": "Vespa",
        "/admin/context_app/sessionsummary/?q=Vespa": "Vespa",
        "/admin/context_app/sessiontag/?q=carburettor": "carburettor",
        "/admin/ingestion_app/memoryitem/?q=carburettor&source__exact=chunk": "carburettor",
        "/admin/context_app/sessionconsolidation/": "session consolidation",
    }
    for url, expected in pages.items():
        response = staff_client.get(url)
        assert response.status_code == 200, url
        assert expected in response.content.decode(), url
    empty = staff_client.get("/admin/context_app/userchatsummary/?q=zeppelin").content.decode()
    assert "Vespa" not in empty


def test_resummarize_action_rebuilds_the_summary_once(staff_client, closed_session, user):
    SessionSummary.objects.filter(session=closed_session).update(summary="- stale digest")
    SessionTag.objects.filter(session=closed_session).delete()

    response = staff_client.post(
        "/admin/sessions_app/chatsession/",
        {"action": "resummarize_sessions", "_selected_action": [str(closed_session.id)]},
        follow=True,
    )

    assert response.status_code == 200
    summary = SessionSummary.objects.get(session=closed_session)
    assert "Vespa" in summary.summary
    assert SessionTag.objects.filter(session=closed_session, tag__contains="vespa").exists()
    assert UserChatSummary.objects.get(user=user, kind="recent").summary == summary.summary
    assert ChatSession.objects.get(id=closed_session.id).status == "closed"


def test_rebuild_rollups_action(staff_client, closed_session, user):
    UserChatSummary.objects.filter(user=user).update(summary="", session_count=0)

    for url, action, selected in [
        ("/admin/sessions_app/chatsession/", "rebuild_user_rollups", str(closed_session.id)),
        (
            "/admin/context_app/userchatsummary/",
            "rebuild_rollups",
            str(UserChatSummary.objects.get(user=user, kind="recent").id),
        ),
    ]:
        UserChatSummary.objects.filter(user=user).update(summary="", session_count=0)
        response = staff_client.post(
            url, {"action": action, "_selected_action": [selected]}, follow=True
        )
        assert response.status_code == 200
        recent = UserChatSummary.objects.get(user=user, kind="recent")
        assert recent.session_count == 1 and "Vespa" in recent.summary
