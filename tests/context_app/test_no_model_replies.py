"""Replies written by the offline provider (no model configured) are not remembered."""

from __future__ import annotations

import pytest

from context_app.models import SessionSummary
from context_app.tasks import session_close_task
from ingestion_app.models import MemoryItem
from memory_site.providers.local import NO_MODEL_NOTICE
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db


def test_no_model_replies_stay_out_of_summaries_and_message_items(user):
    session = open_session(user)
    add_message(session, "user", "I moved to Lisbon last spring and I work at a bakery.")
    add_message(
        session, "assistant", NO_MODEL_NOTICE + " Context it would have used: none.", model="local"
    )
    add_message(session, "user", "I also love hiking in Sintra on weekends.")
    add_message(session, "assistant", "Sintra has lovely trails.", model="gpt-4o-mini")

    message_items = MemoryItem.objects.filter(user=user, metadata__granularity="message")
    assert not any("no language model" in item.content for item in message_items)
    assert any("Sintra has lovely trails" in item.content for item in message_items)

    session.status = "closing"
    session.save(update_fields=["status"])
    session_close_task(str(session.id))
    summary = SessionSummary.objects.get(session=session).summary
    assert "Lisbon" in summary
    assert "no language model" not in summary
