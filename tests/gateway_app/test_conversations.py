"""Conversation matching without HTTP: what a chat app's resends, regenerations, idle closes
and explicit sessions do to the stored messages."""

from __future__ import annotations

import pytest

from gateway_app.services.conversations import conversation_reply_store, conversation_turn_log
from memory_site.errors import Conflict
from sessions_app.models import ChatSession, Message
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db

SYSTEM = {"role": "system", "content": "Be brief."}


def turn(user, history, reply=None, **kwargs):
    logged = conversation_turn_log(user=user, messages=history, **kwargs)
    if reply is not None:
        conversation_reply_store(
            user=user, turn=logged, text=reply, model="m", tokens_in=1, tokens_out=1
        )
        history.append({"role": "assistant", "content": reply})
    return logged


def stored(session) -> list[tuple[str, str]]:
    return list(Message.objects.filter(session=session).values_list("role", "content"))


def test_a_closed_conversation_continues_in_a_new_session_with_only_new_messages(user):
    history = [SYSTEM, {"role": "user", "content": "Plan my week."}]
    first = turn(user, history, reply="Monday: gym.")
    ChatSession.objects.filter(id=first.session.id).update(status="closed")

    history.append({"role": "user", "content": "Add yoga on Tuesday."})
    second = turn(user, history, reply="Tuesday: yoga.")
    assert second.session.id != first.session.id and second.new_session
    assert stored(second.session) == [
        ("user", "Add yoga on Tuesday."),
        ("assistant", "Tuesday: yoga."),
    ]


def test_a_regenerated_reply_replaces_the_old_one_without_repeating_the_question(user):
    history = [{"role": "user", "content": "Name a colour."}]
    first = turn(user, history, reply="Blue.")
    # The app's "regenerate": the same question again, without the old reply.
    again = [{"role": "user", "content": "Name a colour."}]
    logged = turn(user, again, reply="Green.")
    assert logged.session.id == first.session.id and logged.appended == []
    # The regenerated reply replaces the one it regenerates.
    assert stored(first.session) == [
        ("user", "Name a colour."),
        ("assistant", "Green."),
    ]
    # The conversation carries on from the regenerated branch.
    again.append({"role": "user", "content": "Another one."})
    turn(user, again, reply="Red.")
    assert [text for _, text in stored(first.session)][-2:] == ["Another one.", "Red."]


def test_a_reply_is_stored_once_when_two_calls_answer_the_same_turn(user):
    history = [{"role": "user", "content": "Hello?"}]
    one = conversation_turn_log(user=user, messages=history)
    two = conversation_turn_log(user=user, messages=history)
    assert two.appended == []
    first = conversation_reply_store(
        user=user, turn=one, text="Hi!", model="m", tokens_in=1, tokens_out=1
    )
    second = conversation_reply_store(
        user=user, turn=two, text="Hey!", model="m", tokens_in=1, tokens_out=1
    )
    assert first is not None and second is None
    assert stored(one.session) == [("user", "Hello?"), ("assistant", "Hi!")]


def test_a_new_chat_with_the_same_opening_after_a_close_gets_the_whole_chat(user):
    history = [{"role": "user", "content": "Hi"}]
    first = turn(user, history, reply="Hello!")
    ChatSession.objects.filter(id=first.session.id).update(status="closed")
    fresh = turn(user, [{"role": "user", "content": "Hi"}])
    assert fresh.session.id != first.session.id
    assert stored(fresh.session) == [("user", "Hi")]


def test_an_explicit_session_is_not_refilled_with_what_it_already_holds(user, other_user):
    session = open_session(user)
    add_message(session, "user", "I keep bees.")
    add_message(session, "assistant", "Lovely.")
    history = [
        {"role": "user", "content": "I keep bees."},
        {"role": "assistant", "content": "Lovely."},
        {"role": "user", "content": "How many hives do I need?"},
    ]
    turn(user, history, session_id=session.id)
    assert [text for _, text in stored(session)] == [
        "I keep bees.",
        "Lovely.",
        "How many hives do I need?",
    ]
    ChatSession.objects.filter(id=session.id).update(status="closed")
    with pytest.raises(Conflict):
        turn(user, history, session_id=session.id)


def test_tool_messages_and_empty_turns_are_not_stored(user):
    history = [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "4 degrees"},
    ]
    logged = turn(user, history)
    assert stored(logged.session) == [("user", "Weather in Oslo?")]


def test_the_same_conversation_from_two_users_is_two_sessions(user, other_user):
    history = [SYSTEM, {"role": "user", "content": "What did I plan for Friday?"}]
    mine = turn(user, list(history), reply="Dinner with Sam.")
    theirs = turn(other_user, list(history))
    assert theirs.session.id != mine.session.id
    assert theirs.session.user_id == other_user.id
    assert stored(theirs.session) == [("user", "What did I plan for Friday?")]


def test_two_chats_that_open_with_the_same_greeting_are_two_sessions(user):
    cats = [{"role": "user", "content": "Hello"}]
    opened = turn(user, cats, reply="Hi! How can I help?")
    cats.append({"role": "user", "content": "Tell me about Siamese cats please"})
    about_cats = turn(user, cats, reply="Siamese cats are vocal.")
    cats.append({"role": "user", "content": "Do they shed?"})
    later = turn(user, cats, reply="A little.")

    rockets = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "user", "content": "Tell me about Saturn V rockets please"},
    ]
    about_rockets = turn(user, rockets, reply="Saturn V flew to the Moon.")

    # One chat stays one session from its greeting on; the other chat is a session of its own.
    assert opened.session.id == about_cats.session.id == later.session.id
    assert about_rockets.session.id != about_cats.session.id
    assert [text for _, text in stored(about_cats.session)] == [
        "Hello",
        "Hi! How can I help?",
        "Tell me about Siamese cats please",
        "Siamese cats are vocal.",
        "Do they shed?",
        "A little.",
    ]
    assert [text for _, text in stored(about_rockets.session)] == [
        "Hello",
        "Hi! How can I help?",
        "Tell me about Saturn V rockets please",
        "Saturn V flew to the Moon.",
    ]


def test_copies_of_a_call_answered_around_the_first_reply_store_it_once(user):
    """An SDK's retries or an app's resends of one question: some logged before the first
    answer was stored, some after it. However they interleave, the reply is stored once."""
    question = [{"role": "user", "content": "Plan a weekend in Porto."}]

    def reply(logged, text="Day one: Ribeira."):
        return conversation_reply_store(
            user=user, turn=logged, text=text, model="m", tokens_in=1, tokens_out=1
        )

    first = conversation_turn_log(user=user, messages=question)
    assert reply(first) is not None
    after_first = conversation_turn_log(user=user, messages=question)
    after_second = conversation_turn_log(user=user, messages=question)
    reply(after_second)
    reply(after_first)

    assert stored(first.session) == [
        ("user", "Plan a weekend in Porto."),
        ("assistant", "Day one: Ribeira."),
    ]
