"""A call sent again after it was answered (the `openai` SDK's retry of a response that never
arrived, an app resending on reconnect) must not store its turn twice; a regeneration that
gets a different answer is still kept."""

from __future__ import annotations

import pytest

from sessions_app.models import ChatSession, Message
from tests.gateway_app.test_openai_compat_live import SYSTEM, client_for

pytestmark = pytest.mark.django_db(transaction=True)


def stored(user) -> list[tuple[str, str]]:
    session = ChatSession.objects.get(user=user)
    return list(Message.objects.filter(session=session).values_list("role", "content"))


@pytest.mark.parametrize("stream", [False, True])
def test_the_same_call_twice_stores_its_turn_once(live_url, user, upstream, stream):
    client = client_for(live_url, user)
    upstream.reply_text = "Noted: a green Volvo."
    history = [SYSTEM, {"role": "user", "content": "My car is a green Volvo estate."}]
    for _ in range(2):
        answer = client.chat.completions.create(model="fake-model", messages=history, stream=stream)
        if stream:
            list(answer)
    assert stored(user) == [
        ("user", "My car is a green Volvo estate."),
        ("assistant", "Noted: a green Volvo."),
    ]

    # The conversation carries on from the one stored reply.
    history += [
        {"role": "assistant", "content": "Noted: a green Volvo."},
        {"role": "user", "content": "And my bike is red."},
    ]
    client.chat.completions.create(model="fake-model", messages=history)
    upstream.reply_text = "Or perhaps: a red bike."
    client.chat.completions.create(model="fake-model", messages=history)  # regenerate
    assert [text for _, text in stored(user)][2:] == [
        "And my bike is red.",
        "Or perhaps: a red bike.",
    ]
