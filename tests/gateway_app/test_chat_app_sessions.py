"""The request shapes Open WebUI and LibreChat send: a client chat id keys the session, two
chats opening with the same question stay apart without one, a regenerated reply is not a
new turn, and a side task marked by X-Mnemo-Task (Open WebUI's {{TASK}}) is not memory."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from context_app.models import InjectionLog
from ingestion_app.models import MemoryItem
from sessions_app.models import ChatSession, Message
from tests.gateway_app.conftest import token_for

pytestmark = pytest.mark.django_db

URL = "/v1/chat/completions"


def call(client, key, messages, **headers):
    body = {"model": "fake-model", "messages": messages}
    response = client.post(
        URL,
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        **headers,
    )
    assert response.status_code == 200, response.content
    return response.json()["choices"][0]["message"]["content"]


def transcript(session) -> list[tuple[str, str]]:
    return list(
        Message.objects.filter(session=session).order_by("id").values_list("role", "content")
    )


def user_turn(text):
    return {"role": "user", "content": text}


def reply(text):
    return {"role": "assistant", "content": text}


def test_two_chats_with_the_same_opening_stay_two_sessions_without_a_chat_id(user, upstream):
    client, key = Client(), token_for(user)
    upstream.reply_text = "A"
    q = user_turn("What should I pack for a weekend in the Alps?")
    call(client, key, [q])
    call(client, key, [q, reply("A"), user_turn("And for rain?")])
    # A second chat opens with the same question, gets its own answer and goes elsewhere.
    upstream.reply_text = "B"
    call(client, key, [q])
    call(client, key, [q, reply("B"), user_turn("Any gift ideas for my host?")])
    # The first chat goes on.
    upstream.reply_text = "C"
    call(client, key, [q, reply("A"), user_turn("And for rain?"), reply("A"), user_turn("Boots?")])

    sessions = list(ChatSession.objects.filter(user=user).order_by("opened_at", "id"))
    assert len(sessions) == 2
    first, second = (transcript(s) for s in sessions)
    assert [text for _, text in first] == [q["content"], "A", "And for rain?", "A", "Boots?", "C"]
    assert [text for _, text in second] == [q["content"], "B", "Any gift ideas for my host?", "B"]


@pytest.mark.parametrize("header", ["HTTP_X_OPENWEBUI_CHAT_ID", "HTTP_X_MNEMO_CONVERSATION_ID"])
def test_a_client_chat_id_keys_the_session(user, upstream, header):
    client, key = Client(), token_for(user)
    upstream.reply_text = "Sure."
    q = user_turn("Help me plan a dinner party.")
    call(client, key, [q], **{header: "chat-1"})
    call(client, key, [q], **{header: "chat-2"})
    call(client, key, [q, reply("Sure."), user_turn("Vegetarian, please.")], **{header: "chat-1"})

    by_chat = {
        s.id: transcript(s)
        for s in ChatSession.objects.filter(user=user).order_by("opened_at", "id")
    }
    assert [len(t) for t in by_chat.values()] == [4, 2]


def test_a_regenerated_reply_replaces_the_last_one(user, upstream):
    client, key = Client(), token_for(user)
    q = user_turn("Name a good book about salt.")
    upstream.reply_text = "Salt by Kurlansky."
    call(client, key, [q], HTTP_X_OPENWEBUI_CHAT_ID="c1")
    upstream.reply_text = "Try 'Salt: A World History'."
    call(client, key, [q], HTTP_X_OPENWEBUI_CHAT_ID="c1")  # regenerate: the same messages
    session = ChatSession.objects.get(user=user)
    # The new reply replaces the old one, in the transcript and in memory.
    assert transcript(session) == [
        ("user", q["content"]),
        ("assistant", "Try 'Salt: A World History'."),
    ]
    assert not MemoryItem.objects.filter(user=user, content__contains="Kurlansky").exists()
    assert MemoryItem.objects.filter(user=user, content__contains="World History").exists()


def test_a_task_header_call_is_forwarded_without_memory_and_stored_as_none(user, upstream):
    client, key = Client(), token_for(user)
    upstream.reply_text = "Noted."
    call(client, key, [user_turn("My sister Anna lives in Lisbon.")], HTTP_X_OPENWEBUI_CHAT_ID="c1")
    items = set(MemoryItem.objects.filter(user=user).values_list("id", flat=True))
    upstream.requests.clear()
    upstream.reply_text = '{"title": "Sister in Lisbon"}'
    # An edited title prompt: no "### Task:" prefix, only the header says it is a task.
    prompt = "Create a short title for this chat: USER: My sister Anna lives in Lisbon."
    answer = call(client, key, [user_turn(prompt)], HTTP_X_MNEMO_TASK="title_generation")

    assert answer == '{"title": "Sister in Lisbon"}'
    sent = upstream.bodies("/chat/completions")[-1]["messages"]
    assert all(message["role"] != "system" for message in sent)  # no pack
    assert set(MemoryItem.objects.filter(user=user).values_list("id", flat=True)) == items
    assert not ChatSession.objects.filter(user=user, title__startswith="Create a short").exists()
    assert not InjectionLog.objects.filter(session__title__startswith="Create").exists()


def test_an_empty_task_placeholder_is_an_ordinary_turn(user, upstream):
    client, key = Client(), token_for(user)
    call(client, key, [user_turn("I am learning Portuguese.")], HTTP_X_MNEMO_TASK="")
    assert ChatSession.objects.filter(user=user, title__startswith="I am learning").exists()


def test_an_overlong_chat_id_is_a_400(user, upstream):
    response = Client().post(
        URL,
        data=json.dumps({"model": "m", "messages": [user_turn("hi")]}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token_for(user)}",
        HTTP_X_OPENWEBUI_CHAT_ID="x" * 500,
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "X-OpenWebUI-Chat-Id"
    assert not Message.objects.exists()


def test_a_follow_up_turn_keeps_the_memory_an_earlier_turn_brought(user, upstream):
    """Chat apps resend the conversation but not the injected pack: turn 2 shares no word
    with the memory turn 1 found, and must still carry it to the model."""
    from django.utils import timezone

    from memory_site.tokens import count_tokens
    from tests.fake_openai import hashed_embedding

    fact = "The user's sister Ines is allergic to peanuts."
    item = MemoryItem.objects.create(
        user=user,
        source="fact",
        content=fact,
        embedding=hashed_embedding(fact, 384),
        token_count=count_tokens(fact),
        occurred_at=timezone.now(),
    )
    client, key = Client(), token_for(user)
    upstream.reply_text = "Happy to help."
    first = [user_turn("I am planning a birthday dinner for my sister Ines.")]
    call(client, key, first, HTTP_X_OPENWEBUI_CHAT_ID="c1")
    turn_one = upstream.bodies("/chat/completions")[-1]["messages"][0]
    assert turn_one["role"] == "system" and "peanuts" in turn_one["content"]

    follow_up = [*first, reply("Happy to help."), user_turn("Also, a gift under 100 euros?")]
    call(client, key, follow_up, HTTP_X_OPENWEBUI_CHAT_ID="c1")
    turn_two = upstream.bodies("/chat/completions")[-1]["messages"][0]
    assert turn_two["role"] == "system" and "peanuts" in turn_two["content"]
    log = InjectionLog.objects.filter(session__user=user).latest("id")
    assert log.turn_number == 2 and item.id in [m["id"] for m in log.memories]


def test_task_calls_are_listed_nowhere_and_keep_no_text(user, upstream):
    from sessions_app.models import UsageLog

    client, key = Client(), token_for(user)
    upstream.reply_text = "Noted."
    call(client, key, [user_turn("My sister Anna lives in Lisbon.")], HTTP_X_OPENWEBUI_CHAT_ID="c1")
    upstream.reply_text = '{"tags": ["family"]}'
    quoted = "### Task:\nGenerate tags.\n<chat_history>\nUSER: My sister Anna lives in Lisbon.\n</chat_history>"
    call(client, key, [user_turn(quoted)])
    call(
        client,
        key,
        [user_turn("Suggest an emoji for: Lisbon")],
        HTTP_X_MNEMO_TASK="emoji_generation",
    )

    api = Client()
    listed = api.get("/api/v1/chat/sessions", HTTP_AUTHORIZATION=f"Token {key}").json()
    titles = [row["title"] for row in listed["results"]]
    assert titles == ["My sister Anna lives in Lisbon."]
    # No text of the task calls is kept; their usage is.
    assert not Message.objects.filter(session__metadata__contains={"app_tasks": True}).exists()
    assert UsageLog.objects.filter(user=user).count() == 3


def test_a_turn_asks_the_model_for_its_entities_once(
    user, fake_openai, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """A turn stores three items (the question, the reply, their exchange chunk); the model's
    entity extraction reads the exchange chunk alone, not the same text three times."""
    from entities_app.services import entities as entity_services
    from memory_site.task_paths import ENTITIES_LLM_TASK

    settings.MNEMO_ENTITY_TASKS = True
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_MODEL = "text-embedding-3-small"
    queued = []
    monkeypatch.setattr(
        entity_services, "async_task", lambda path, *args, **kwargs: queued.append((path, args))
    )
    client, key = Client(), token_for(user)
    fake_openai.reply_text = "Porto in June sounds lovely."
    with django_capture_on_commit_callbacks(execute=True):
        call(
            client,
            key,
            [user_turn("My sister Ines is getting married in Porto in June.")],
            HTTP_X_OPENWEBUI_CHAT_ID="c1",
        )
    llm_items = [args[0] for path, args in queued if path == ENTITIES_LLM_TASK]
    assert len(llm_items) == 1
    assert MemoryItem.objects.get(id=llm_items[0]).metadata.get("granularity") != "message"


def test_a_failed_task_call_keeps_no_text(user, upstream):
    client, key = Client(), token_for(user)
    upstream.reply_text = "Noted."
    call(client, key, [user_turn("My sister Anna lives in Lisbon.")], HTTP_X_OPENWEBUI_CHAT_ID="c1")
    call(client, key, [user_turn("Title this chat")], HTTP_X_MNEMO_TASK="title_generation")
    upstream.fail_count, upstream.fail_status = 1, 500
    response = Client().post(
        URL,
        data=json.dumps({"model": "m", "messages": [user_turn("Tags for: Anna in Lisbon")]}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        HTTP_X_MNEMO_TASK="tags_generation",
    )
    assert response.status_code >= 500
    assert not Message.objects.filter(session__metadata__contains={"app_tasks": True}).exists()
