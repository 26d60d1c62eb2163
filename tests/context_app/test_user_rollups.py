"""User rollups: "recent" and "history" split by the sessions' own dates, within their caps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from context_app.models import UserChatSummary
from context_app.services.rollups import user_rollups_rebuild
from context_app.summary_selectors import user_rollups
from context_app.tasks import session_close_task
from sessions_app.models import ChatSession
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db


def closed_session(user, turns, *, at: datetime, app_id: str = "default"):
    """A session whose messages carry historical dates (as the LoCoMo benchmark writes them)."""
    session = open_session(user, app_id=app_id)
    for offset, (role, content) in enumerate(turns):
        add_message(session, role, content, created_at=at + timedelta(minutes=offset))
    ChatSession.objects.filter(id=session.id).update(status="closing")
    assert session_close_task(str(session.id)) == "closed"
    return session


GARDEN = [
    ("user", "My tomato plants have yellow leaves at the bottom."),
    ("assistant", "Lower yellow leaves usually mean nitrogen deficiency; feed them."),
]
PIANO = [
    ("user", "I started piano lessons and practise Chopin nocturnes every evening."),
    ("assistant", "Nocturne Op. 9 No. 2 is a lovely first Chopin piece."),
]
MARATHON = [
    ("user", "I am training for the Berlin marathon and run sixty kilometres a week."),
    ("assistant", "Add one long run of thirty kilometres each week."),
]


def test_recent_and_history_follow_the_sessions_own_dates(user):
    closed_session(user, GARDEN, at=datetime(2023, 1, 5, 10, tzinfo=UTC))
    closed_session(user, PIANO, at=datetime(2023, 5, 1, 18, tzinfo=UTC))
    closed_session(user, MARATHON, at=datetime(2023, 5, 20, 7, tzinfo=UTC))

    rollups = user_rollups(user=user, app_id="default")

    recent, history = rollups["recent"], rollups["history"]
    assert recent.session_count == 2
    assert "Chopin" in recent.summary and "marathon" in recent.summary
    assert "tomato" not in recent.summary
    assert history.session_count == 1
    assert "tomato" in history.summary
    assert recent.period_end == datetime(2023, 5, 20, 7, 1, tzinfo=UTC)
    assert history.period_end == datetime(2023, 1, 5, 10, 1, tzinfo=UTC)


def test_rollups_are_per_app_and_per_user(user, other_user):
    closed_session(user, GARDEN, at=datetime(2024, 3, 1, tzinfo=UTC), app_id="garden-app")
    closed_session(other_user, PIANO, at=datetime(2024, 3, 2, tzinfo=UTC))

    assert user_rollups(user=user, app_id="default") == {}
    garden = user_rollups(user=user, app_id="garden-app")
    assert "tomato" in garden["recent"].summary
    assert "Chopin" not in garden["recent"].summary
    assert "Chopin" in user_rollups(user=other_user, app_id="default")["recent"].summary


def test_each_rollup_stays_within_its_cap(user, settings):
    settings.MNEMO_ROLLUP_RECENT_MAX_CHARS = 300
    settings.MNEMO_ROLLUP_HISTORY_MAX_CHARS = 200
    start = datetime(2022, 1, 1, tzinfo=UTC)
    topics = ["kayaking", "chess openings", "knitting socks", "bonsai pruning", "tax returns"]
    for index, topic in enumerate(topics * 2):
        turns = [
            ("user", f"I want to get much better at {topic}; I practise it every weekend."),
            ("assistant", f"For {topic}, set one measurable goal per month and keep a log."),
        ]
        # Half the sessions 2022, half within the last weeks of the newest one.
        at = start + timedelta(days=index * 3 if index % 2 else 300 + index)
        closed_session(user, turns, at=at)

    rollups = user_rollups(user=user, app_id="default")
    assert 0 < len(rollups["recent"].summary) <= 300
    assert 0 < len(rollups["history"].summary) <= 200
    assert rollups["recent"].session_count + rollups["history"].session_count == 10


def test_rebuild_is_idempotent(user):
    closed_session(user, GARDEN, at=datetime(2024, 6, 1, tzinfo=UTC))
    before = {r.kind: r.summary for r in UserChatSummary.objects.filter(user=user)}

    user_rollups_rebuild(user_id=user.id, app_id="default")
    user_rollups_rebuild(user_id=user.id, app_id="default")

    assert UserChatSummary.objects.filter(user=user).count() == 2
    assert {r.kind: r.summary for r in UserChatSummary.objects.filter(user=user)} == before


AUSTIN = [
    ("user", "I live in Austin and I work at Globex as a data analyst. I like hiking."),
    ("assistant", "There are great trails for that near you."),
]
DENVER = [
    ("user", "Big news: I moved to Denver last week, and I now work at Initech."),
    ("assistant", "Congratulations on the move!"),
]


def test_a_rollup_leaves_out_what_a_later_session_changed(user, settings):
    settings.LLM_PROVIDER = "local"
    closed_session(user, AUSTIN, at=datetime(2024, 3, 1, 9, tzinfo=UTC))
    closed_session(user, DENVER, at=datetime(2024, 3, 20, 9, tzinfo=UTC))

    recent = user_rollups(user=user, app_id="default")["recent"].summary

    assert "Denver" in recent and "Initech" in recent
    assert "Austin" not in recent and "Globex" not in recent
    assert "hiking" in recent  # not changed by the later session: kept


def test_the_history_leaves_out_what_a_recent_session_changed(user, settings):
    settings.LLM_PROVIDER = "local"
    closed_session(user, AUSTIN, at=datetime(2023, 1, 5, 9, tzinfo=UTC))
    closed_session(user, DENVER, at=datetime(2023, 6, 1, 9, tzinfo=UTC))

    rollups = user_rollups(user=user, app_id="default")

    assert rollups["history"].session_count == 1
    assert "Austin" not in rollups["history"].summary
    assert "hiking" in rollups["history"].summary
    assert "Denver" in rollups["recent"].summary
