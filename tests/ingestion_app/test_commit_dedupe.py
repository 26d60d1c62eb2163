"""Offline dedupe and update: near-identical facts are skipped, changed facts replace the old
value and keep it in history (local extractor, local embedder, the is_update rule)."""

from __future__ import annotations

import pytest

from ingestion_app.models import FactHistory, MemoryItem
from ingestion_app.services.commit import memory_commit
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


def say(user, *texts, **session_fields):
    session = open_session(user, **session_fields)
    for text in texts:
        add_message(session, "user", text)
    return session


def test_same_fact_in_a_later_session_is_skipped(user):
    memory_commit(user=user, chat_session_id=say(user, "I live in Lisbon.").id)
    result = memory_commit(user=user, chat_session_id=say(user, "I live in Lisbon.").id)
    assert result.facts_committed == 0
    assert result.duplicates_skipped == 1
    assert "already known" in result.toast_message
    assert MemoryItem.objects.filter(user=user).count() == 1


def test_near_identical_wording_is_a_duplicate(user):
    memory_commit(user=user, chat_session_id=say(user, "I live in Paris.").id)
    result = memory_commit(user=user, chat_session_id=say(user, "I live in Paris, France.").id)
    assert result.duplicates_skipped == 1
    assert list(MemoryItem.objects.values_list("content", flat=True)) == [
        "The user lives in Paris."
    ]


def test_duplicate_threshold_is_a_setting(user, settings):
    settings.MNEMO_FACT_DUPLICATE_SIMILARITY = 0.999
    memory_commit(user=user, chat_session_id=say(user, "I live in Paris.").id)
    result = memory_commit(user=user, chat_session_id=say(user, "I live in Paris, France.").id)
    assert result.duplicates_skipped == 0
    assert MemoryItem.objects.filter(user=user).count() == 2


def test_changed_fact_replaces_the_old_one_and_keeps_history(user):
    first = memory_commit(user=user, chat_session_id=say(user, "I live in Paris.").id)
    later = say(user, "I moved to Berlin last month.")
    result = memory_commit(user=user, chat_session_id=later.id, rag_session_id="r2")

    assert result.facts_updated == 1
    assert result.facts_committed == 0
    assert "1 updated" in result.toast_message
    fact = MemoryItem.objects.get(user=user)
    assert fact.id == first.facts[0].id
    assert fact.content == "The user moved to Berlin last month."
    assert fact.chat_session_id == later.id
    assert fact.rag_session_id == "r2"
    history = list(fact.history.values_list("event", "previous_content", "new_content"))
    assert history == [
        ("ADD", "", "The user lives in Paris."),
        ("UPDATE", "The user lives in Paris.", "The user moved to Berlin last month."),
    ]
    assert "replaces" in fact.history.last().reason
    assert result.facts[0].event == "UPDATE"
    assert result.facts[0].previous_content == "The user lives in Paris."


def test_updated_fact_is_re_embedded(user):
    from memory_site.providers import embed_one

    memory_commit(user=user, chat_session_id=say(user, "I work at Acme.").id)
    memory_commit(user=user, chat_session_id=say(user, "I work at Globex.").id)
    fact = MemoryItem.objects.get(user=user)
    assert fact.content == "The user works at Globex."
    expected = embed_one("The user works at Globex.")
    assert sum(a * b for a, b in zip(fact.embedding, expected, strict=True)) > 0.999


def test_additions_about_other_things_are_not_updates(user):
    memory_commit(user=user, chat_session_id=say(user, "I live in Paris.").id)
    result = memory_commit(
        user=user, chat_session_id=say(user, "I like hiking. My sister Anna lives in Rome.").id
    )
    assert result.facts_updated == 0
    assert result.facts_committed == 2
    assert set(MemoryItem.objects.values_list("content", flat=True)) == {
        "The user lives in Paris.",
        "The user likes hiking.",
        "The user's sister Anna lives in Rome.",
    }


def test_change_within_one_commit_keeps_the_latest_value_with_history(user):
    session = say(user, "I live in Paris.", "Actually, I moved to Berlin last month.")
    result = memory_commit(user=user, chat_session_id=session.id)
    fact = MemoryItem.objects.get(user=user)
    assert result.facts_committed == 1
    assert "Berlin" in fact.content
    events = list(fact.history.values_list("event", flat=True))
    assert events == [FactHistory.Event.ADD, FactHistory.Event.UPDATE]
    assert fact.history.last().previous_content == "The user lives in Paris."


def test_other_users_facts_are_neither_duplicates_nor_updated(user, other_user):
    memory_commit(user=other_user, chat_session_id=say(other_user, "I live in Paris.").id)
    result = memory_commit(user=user, chat_session_id=say(user, "I live in Paris.").id)
    assert result.facts_committed == 1
    assert result.duplicates_skipped == 0
    result = memory_commit(user=user, chat_session_id=say(user, "I moved to Berlin.").id)
    assert result.facts_updated == 1
    assert MemoryItem.objects.get(user=other_user).content == "The user lives in Paris."
