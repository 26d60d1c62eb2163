"""ContextSettings.current(): the per-turn read, cached briefly outside transactions."""

from __future__ import annotations

import pytest

from context_app.models import ContextSettings
from context_app.models.context import _settings_cache


@pytest.mark.django_db(transaction=True)
def test_an_edit_saved_in_this_process_applies_to_the_next_turn_at_once():
    ContextSettings.objects.update_or_create(pk=1, defaults={"memory_top_k": 5})
    assert ContextSettings.current().memory_top_k == 5

    row = ContextSettings.load()
    row.memory_top_k = 9
    row.save()

    assert ContextSettings.current().memory_top_k == 9


@pytest.mark.django_db(transaction=True)
def test_an_edit_from_another_process_applies_within_the_cache_time(monkeypatch):
    ContextSettings.objects.update_or_create(pk=1, defaults={"memory_top_k": 5})
    assert ContextSettings.current().memory_top_k == 5
    # Another process's edit: the row changes without this process's save signal.
    ContextSettings.objects.filter(pk=1).update(memory_top_k=7)
    assert ContextSettings.current().memory_top_k == 5  # still the cached row

    cached_at, row = _settings_cache["row"]
    _settings_cache["row"] = (cached_at - ContextSettings.CACHE_SECONDS - 0.1, row)

    assert ContextSettings.current().memory_top_k == 7


@pytest.mark.django_db(transaction=True)
def test_callers_get_their_own_copy():
    ContextSettings.objects.update_or_create(pk=1, defaults={"min_user_turns": 3})
    adjusted = ContextSettings.current()
    adjusted.min_user_turns = 1  # the gateway lowers it for its own turns

    assert ContextSettings.current().min_user_turns == 3


@pytest.mark.django_db
def test_inside_a_transaction_the_row_is_read_not_cached():
    ContextSettings.objects.update_or_create(pk=1, defaults={"memory_top_k": 4})
    ContextSettings.objects.filter(pk=1).update(memory_top_k=6)

    assert ContextSettings.current().memory_top_k == 6
    assert "row" not in _settings_cache
