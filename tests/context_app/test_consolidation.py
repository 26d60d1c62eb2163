"""Long sessions: past the token budget the oldest half is folded into long-term memory."""

from __future__ import annotations

import pytest

from context_app.models import SessionConsolidation
from context_app.services.consolidation import consolidation_check
from context_app.summary_selectors import (
    session_consolidation_summaries,
    session_high_water_mark,
    session_live_messages,
)
from context_app.tasks import consolidation_task
from ingestion_app.models import MemoryItem
from sessions_app.models import Message
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db

TOPICS = [
    ("sourdough starter feeding schedules", "feed it twice daily at equal weights"),
    ("kayak rolling technique in cold water", "practise the hip snap in a pool first"),
    ("Chopin nocturne fingering for small hands", "redistribute the left-hand arpeggios"),
    ("tomato blight prevention in humid summers", "water at the base and prune low leaves"),
    ("Berlin marathon pacing strategy", "run the first half ten seconds slower per km"),
    ("bonsai juniper winter care", "keep it outdoors but shelter the roots from frost"),
]


def long_exchange(session, index):
    topic, advice = TOPICS[index % len(TOPICS)]
    add_message(session, "user", f"I keep struggling with {topic}. " * 4 + "What should I change?")
    add_message(session, "assistant", f"For {topic}, {advice}. " * 4)


def test_nothing_happens_below_the_budget(user, settings, django_capture_on_commit_callbacks):
    settings.MNEMO_CONSOLIDATION_TOKENS = 10_000
    session = open_session(user)
    with django_capture_on_commit_callbacks(execute=True):
        for index in range(3):
            long_exchange(session, index)
    assert not SessionConsolidation.objects.filter(session=session).exists()
    assert not MemoryItem.objects.filter(user=user, metadata__kind="consolidation").exists()


def test_past_the_budget_the_oldest_half_becomes_a_summary_memory(
    user, settings, django_capture_on_commit_callbacks
):
    settings.MNEMO_CONSOLIDATION_TOKENS = 400
    session = open_session(user)
    with django_capture_on_commit_callbacks(execute=True):
        for index in range(6):
            long_exchange(session, index)

    messages = list(Message.objects.filter(session=session).order_by("id"))
    summaries = list(session_consolidation_summaries(session=session))
    assert summaries, "no consolidation happened"
    first = summaries[0]
    assert first.source == "summary"
    assert first.embedding is not None
    assert first.source_message_ids[0] == messages[0].id
    # The oldest messages, in order, ending after an assistant reply.
    covered = [m.id for m in messages[: len(first.source_message_ids)]]
    assert first.source_message_ids == covered
    assert Message.objects.get(id=first.source_message_ids[-1]).role == "assistant"
    assert "sourdough" in first.content.lower()
    assert first.content.startswith("- ")
    assert first.metadata["session_id"] == str(session.id)

    # Every consolidated message is behind the high-water mark; the rest stays under budget.
    high_water = session_high_water_mark(session=session)
    assert high_water == summaries[-1].source_message_ids[-1]
    live = list(session_live_messages(session=session))
    assert sum(m.token_count for m in live) <= 400
    assert all(m.id > high_water for m in live)
    # Ranges never overlap.
    all_ids = [i for s in summaries for i in s.source_message_ids]
    assert len(all_ids) == len(set(all_ids))


def test_one_task_per_session_and_reruns_write_nothing(
    user, settings, django_capture_on_commit_callbacks
):
    settings.MNEMO_CONSOLIDATION_TOKENS = 400
    session = open_session(user)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        for index in range(6):
            long_exchange(session, index)
    # Many messages passed the budget, but only one task was queued (the claim holds).
    assert len(callbacks) == 1
    assert SessionConsolidation.objects.get(session=session).queued_at is not None
    assert consolidation_check(message=Message.objects.filter(session=session).last()) is False

    assert consolidation_task(str(session.id)).startswith("consolidated")
    count = MemoryItem.objects.filter(user=user, metadata__kind="consolidation").count()
    assert count >= 1
    assert consolidation_task(str(session.id)) == "consolidated 0"
    assert MemoryItem.objects.filter(user=user, metadata__kind="consolidation").count() == count
    assert SessionConsolidation.objects.get(session=session).queued_at is None
