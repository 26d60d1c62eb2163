"""A question about when, or in what order, the user did things ranks the turns that report
them done above the requests that only name the same things."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval.config import RANKING
from retrieval.search import memory_search
from tests.factories import memory_write

pytestmark = pytest.mark.django_db


def remember(user, content: str):
    return memory_write(user, content, occurred_at=datetime(2026, 1, 5, tzinfo=UTC))


@pytest.fixture
def working_chat(user):
    """Three requests naming two things, two reports of them done, one unrelated memory."""
    requests = [
        remember(user, "Can you help me with the CSV import and the category chart? They break."),
        remember(user, "How should I structure the CSV import and the category chart for tests?"),
        remember(user, "Where would you start refactoring the CSV import and the category chart?"),
    ]
    done = [
        remember(user, "I just finished the CSV import."),
        remember(user, "Today I got the category chart working."),
    ]
    remember(user, "The gym membership renews in March.")
    return {item.id for item in requests}, {item.id for item in done}


def test_the_reports_of_things_done_come_before_requests_about_them(user, working_chat):
    requests, done = working_chat
    question = "In what order did I build the CSV import and the category chart?"

    ranked = [hit.id for hit in memory_search(user=user, query=question).items]
    assert set(ranked[:2]) == done
    # On its words alone a request naming both things comes first.
    flat = RANKING.replace(event_weight=1.0)
    assert memory_search(user=user, query=question, config=flat).items[0].id in requests


def test_a_question_of_another_kind_is_ranked_on_its_words(user, working_chat):
    requests, _ = working_chat
    question = "What should I change in the CSV import and the category chart?"
    assert memory_search(user=user, query=question).items[0].id in requests
