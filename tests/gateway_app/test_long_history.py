"""A long chat Mnemo sees for the first time (an app switched to Mnemo mid-conversation): the
reply does not wait for every earlier turn to be indexed (a model call per turn pair); those
are queued for the worker, and once it runs every turn is searchable."""

from __future__ import annotations

import pytest

from gateway_app.tasks import messages_hooks_task
from ingestion_app.models import MemoryItem
from memory_site.task_paths import GATEWAY_BACKLOG_INDEX_TASK
from sessions_app.models import Message
from tests.gateway_app.test_openai_compat_live import SYSTEM, client_for

pytestmark = pytest.mark.django_db(transaction=True)


def remembered(word: str) -> bool:
    return MemoryItem.objects.filter(content__contains=word).exists()


def test_earlier_turns_of_a_first_seen_chat_are_indexed_by_the_worker(
    live_url, user, upstream, monkeypatch
):
    queued = []
    monkeypatch.setattr("gateway_app.services.turns.BACKLOG_TASK_MESSAGES", 3)
    monkeypatch.setattr(
        "gateway_app.services.turns.async_task", lambda path, *args, **kwargs: queued.append(args)
    )
    history = [SYSTEM]
    for pet in ("a cat called Miso", "a parrot called Kiwi", "a tortoise called Shelly"):
        history += [
            {"role": "user", "content": f"I have {pet}."},
            {"role": "assistant", "content": "Lovely."},
        ]
    history.append({"role": "user", "content": "What food suits them all?"})
    client_for(live_url, user).chat.completions.create(model="fake-model", messages=history)

    messages = list(Message.objects.filter(user=user).order_by("id"))
    assert [m.content for m in messages[:7]] == [m["content"] for m in history[1:]]
    # A new session's first call indexes once the reply is in (a failed call leaves nothing):
    # the newest exchange, the question and its reply, in the request; the earlier turns in
    # batches (each inside the task timeout).
    older = [m.id for m in messages[:6]]
    assert queued == [(older[:3],), (older[3:],)]
    assert not remembered("Miso") and not remembered("Kiwi") and not remembered("Shelly")

    assert GATEWAY_BACKLOG_INDEX_TASK == "gateway_app.tasks.messages_hooks_task"
    assert [messages_hooks_task(*batch) for batch in queued] == [3, 3]
    assert remembered("Shelly")
    assert remembered("Miso") and remembered("Kiwi")
