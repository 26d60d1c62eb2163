"""A /v1 turn of an ongoing chat costs a bounded number of queries, whatever its history."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from sessions_app.models import Message
from tests.gateway_app.conftest import token_for

pytestmark = pytest.mark.django_db

URL = "/v1/chat/completions"


def turn(client, key, messages):
    response = client.post(
        URL,
        data=json.dumps({"model": "m", "messages": messages}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 200
    return response.json()["choices"][0]["message"]["content"]


def chat_of(length: int, client, key, upstream) -> list[dict]:
    history: list[dict] = []
    for index in range(length):
        upstream.reply_text = f"Noted, rye note {index}."
        history.append({"role": "user", "content": f"Rye bread note {index}: a sour starter."})
        history.append({"role": "assistant", "content": turn(client, key, history)})
    return history


@pytest.mark.parametrize("earlier_turns", [2, 6])
def test_a_v1_turn_runs_a_bounded_number_of_queries_however_long_the_chat(
    user, upstream, django_assert_max_num_queries, earlier_turns
):
    """Identify the chat, build the pack (profile, rollups, search), store the new turn with
    its hooks: one bound after 2 earlier turns and after 6 (a longer chat adds one count of
    its exchanges, once), a few queries above what a turn takes, so neither a query per
    earlier message nor one per memory creeps in. Each statement counts, also those the
    search pipelines into one round trip."""
    client, key = Client(), token_for(user)
    history = chat_of(earlier_turns, client, key, upstream)
    upstream.reply_text = "About 75% water for rye."
    history.append({"role": "user", "content": "How much water does rye dough need?"})

    with django_assert_max_num_queries(68):
        assert turn(client, key, history) == "About 75% water for rye."

    assert Message.objects.filter(session__user=user).count() == 2 * earlier_turns + 2
