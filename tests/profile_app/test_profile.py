"""The user profile end to end: learned from chats, imports and commits, carried first in the
next chat's first pack (REST stream and /v1), edited through the API, private to its user."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from context_app.models import ContextSettings, InjectionLog
from ingestion_app.services.commit.run import memory_commit
from profile_app.models import ProfileEntry
from profile_app.services.profile import (
    StatementSource,
    profile_learn,
    profile_memories_read,
    profile_message_read,
)
from sessions_app.models import Message
from sessions_app.services.messages import message_append
from tests.context_app.stream_helpers import (  # noqa: F401 - generous_budget is a fixture
    generous_budget,
    stream_turn,
)
from tests.factories import add_message, open_session
from tests.gateway_app.conftest import token_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("generous_budget")]

INSTRUCTION = "Always format code snippets with syntax highlighting."
PREFERENCE = "I prefer minimal dependencies."


def chat_the_profile_into_a_first_chat(user):
    session = open_session(user, title="Budget tracker")
    add_message(
        session,
        "user",
        f"I'm building a budget tracker in Flask. {INSTRUCTION} Also, {PREFERENCE.lower()}",
    )
    add_message(session, "assistant", "Noted. Here is a project layout ...")
    return session


def active_texts(user) -> list[str]:
    return list(
        ProfileEntry.objects.filter(user=user, status="active")
        .order_by("kind", "id")
        .values_list("text", flat=True)
    )


def test_a_chat_fills_the_profile_with_its_source_message(user):
    session = chat_the_profile_into_a_first_chat(user)
    entries = {e.kind: e for e in ProfileEntry.objects.filter(user=user)}
    assert entries["instruction"].text == INSTRUCTION
    assert entries["preference"].text == "Also, i prefer minimal dependencies."
    assert entries["fact"].text == "Working on: a budget tracker in Flask"
    message = Message.objects.get(session=session, role="user")
    assert entries["instruction"].source_message_id == message.id
    assert entries["instruction"].source_message_ids == [message.id]
    assert entries["instruction"].origin == "chat"
    # The assistant's reply states nothing about the user.
    add_message(session, "assistant", "Always use a virtualenv. I prefer Poetry.")
    assert ProfileEntry.objects.filter(user=user).count() == 3


def test_the_next_chats_first_rest_turn_carries_the_profile_first(api, user, fake_openai):
    chat_the_profile_into_a_first_chat(user)
    new_chat = open_session(user)

    _, events, _ = stream_turn(
        api,
        "Could you show me how to implement a login feature?",
        session_id=new_chat.id,
        debug=True,
    )

    pack = events[0][1]["pack"]
    sent = [b for b in fake_openai.bodies("/chat/completions") if b.get("stream")][-1]
    assert sent["messages"][0] == {"role": "system", "content": pack}
    first_segment = pack.split("\n\n")[1]
    assert first_segment.startswith("[Profile]\nStanding instructions")
    assert INSTRUCTION in first_segment and "prefer minimal dependencies" in first_segment
    assert first_segment.index(INSTRUCTION) < first_segment.index("minimal dependencies")
    log = InjectionLog.objects.get(session=new_chat)
    profile = next(s for s in log.segments if s["name"] == "Profile")
    assert sorted(profile["entry_ids"]) == sorted(
        ProfileEntry.objects.filter(user=user).values_list("id", flat=True)
    )


def test_the_v1_endpoint_carries_the_profile_from_the_first_message(user, fake_embedder):
    upstream = fake_embedder
    chat_the_profile_into_a_first_chat(user)
    client, key = Client(), token_for(user)
    upstream.reply_text = "Here you go."
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "Add a login page."}]}
    response = client.post(
        "/v1/chat/completions",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 200, response.content
    sent = upstream.bodies("/chat/completions")[-1]["messages"]
    system = "\n".join(m["content"] for m in sent if m["role"] == "system")
    assert "[Profile]" in system and INSTRUCTION in system and "minimal dependencies" in system


def test_a_changed_instruction_replaces_the_old_one_in_the_next_pack(api, user, fake_openai):
    session = open_session(user)
    add_message(session, "user", "Always answer in English, please.")
    add_message(session, "user", "From now on, answer in French.")
    assert active_texts(user) == ["From now on, answer in French."]
    old = ProfileEntry.objects.get(user=user, text__startswith="Always answer")
    assert old.status == "superseded" and old.superseded_by.text.endswith("in French.")

    _, events, _ = stream_turn(api, "Hello there", session_id=open_session(user).id, debug=True)
    pack = events[0][1]["pack"]
    assert "answer in French" in pack and "answer in English" not in pack


def test_a_withdrawn_instruction_leaves_the_profile_but_stays_in_its_history(api, user):
    session = open_session(user)
    add_message(session, "user", "Always add type hints to Python code.")
    add_message(session, "user", "You no longer need to add type hints.")
    assert active_texts(user) == []
    body = api.get("/api/v1/profile", {"include_history": "true"}).json()
    assert body["instructions"] == []
    assert [(e["text"], e["status"]) for e in body["history"]] == [
        ("Always add type hints to Python code.", "withdrawn")
    ]


def test_an_old_import_never_replaces_what_the_user_said_since(user):
    now = timezone.now()
    profile_learn(
        text="From now on, answer in French.",
        source=StatementSource(user_id=user.id, app_id="default", origin="chat", stated_at=now),
    )
    profile_learn(
        text="Always answer in German.",
        source=StatementSource(
            user_id=user.id, app_id="default", origin="import", stated_at=now - timedelta(days=400)
        ),
    )
    assert active_texts(user) == ["From now on, answer in French."]
    old = ProfileEntry.objects.get(user=user, origin="import")
    assert old.status == "superseded"


def test_api_reads_adds_edits_and_deletes_entries(api, user):
    response = api.patch(
        "/api/v1/profile",
        {
            "add": [
                {"kind": "instruction", "text": "Answer in British English."},
                {"kind": "fact", "text": "Home: Leeds"},
            ]
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    (instruction,) = body["instructions"]
    assert instruction["text"] == "Answer in British English." and instruction["origin"] == "user"
    assert [f["text"] for f in body["facts"]] == ["Home: Leeds"]

    edited = api.patch(
        f"/api/v1/profile/entries/{instruction['id']}",
        {"text": "Answer in American English."},
        format="json",
    )
    assert edited.status_code == 200
    history = api.get(f"/api/v1/profile/entries/{edited.json()['id']}/history").json()
    assert [(h["text"], h["status"]) for h in history] == [
        ("Answer in British English.", "superseded"),
        ("Answer in American English.", "active"),
    ]
    # The old version is history: it cannot be edited again.
    assert (
        api.patch(
            f"/api/v1/profile/entries/{instruction['id']}", {"text": "x"}, format="json"
        ).status_code
        == 404
    )

    assert api.delete(f"/api/v1/profile/entries/{edited.json()['id']}").status_code == 204
    assert not ProfileEntry.objects.filter(user=user, kind="instruction").exists()
    assert api.get("/api/v1/profile").json()["instructions"] == []


def test_a_deleted_entry_is_gone_from_the_next_pack(api, user, fake_openai):
    chat_the_profile_into_a_first_chat(user)
    entry = ProfileEntry.objects.get(user=user, kind="instruction")
    assert api.delete(f"/api/v1/profile/entries/{entry.id}").status_code == 204
    _, events, _ = stream_turn(api, "Hi again", session_id=open_session(user).id, debug=True)
    pack = events[0][1]["pack"]
    assert INSTRUCTION not in pack and "minimal dependencies" in pack


def test_another_users_profile_is_a_404_and_never_shown(api, other_api, user, other_user):
    chat_the_profile_into_a_first_chat(user)
    entry = ProfileEntry.objects.filter(user=user).first()
    assert other_api.get("/api/v1/profile").json()["instructions"] == []
    for call in (
        lambda: other_api.get(f"/api/v1/profile/entries/{entry.id}"),
        lambda: other_api.get(f"/api/v1/profile/entries/{entry.id}/history"),
        lambda: other_api.patch(
            f"/api/v1/profile/entries/{entry.id}", {"text": "x"}, format="json"
        ),
        lambda: other_api.delete(f"/api/v1/profile/entries/{entry.id}"),
        lambda: other_api.patch("/api/v1/profile", {"delete": [entry.id]}, format="json"),
    ):
        response = call()
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "profile_entry_not_found"
    assert ProfileEntry.objects.filter(id=entry.id, text=entry.text).exists()


def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(api, user):
    chat_the_profile_into_a_first_chat(user)
    before = active_texts(user)
    cases = [
        ({}, None),
        ({"add": [{"kind": "wish", "text": "x"}]}, "add"),
        ({"add": [{"kind": "instruction", "text": ""}]}, "add"),
        ({"add": [{"kind": "instruction", "text": 5}]}, "add"),
        ({"add": [{"kind": "instruction", "text": "x" * 501}]}, "add"),
        ({"delete": ["one"]}, "delete"),
        ({"update": [{"id": 1}]}, "update"),
    ]
    for body, field in cases:
        response = api.patch("/api/v1/profile", body, format="json")
        assert response.status_code == 400, body
        if field:
            assert response.json()["error"]["field"].startswith(field), response.json()
    # All or nothing: a good add beside an unknown id stores neither.
    response = api.patch(
        "/api/v1/profile",
        {"add": [{"kind": "preference", "text": "I like Go."}], "delete": [999_999]},
        format="json",
    )
    assert response.status_code == 404
    assert active_texts(user) == before


def test_the_pack_keeps_the_profile_within_its_cap_and_rebuilds_when_it_changes(
    api, user, fake_openai
):
    ContextSettings.objects.filter(pk=1).update(profile_cap_chars=200, refresh_every_turns=10)
    session = open_session(user)
    for index in range(8):
        add_message(session, "user", f"Always mention the ticket number TCK-{index} in answers.")
        add_message(session, "user", f"I prefer library number {index} for charts.")
    chat = open_session(user)
    _, events, _ = stream_turn(api, "Hello", session_id=chat.id, debug=True)
    pack = events[0][1]["pack"]
    profile = pack.split("\n\n")[1]
    assert len(profile) <= 200 + len("[Profile]\n")
    assert "TCK-7" in profile  # newest first

    add_message(chat, "user", "From now on, reply in Italian.")
    _, events, _ = stream_turn(api, "Next question", session_id=chat.id, debug=True)
    assert "reply in Italian" in events[0][1]["pack"]


def test_the_model_reads_messages_when_one_is_configured(user, fake_openai):
    session = open_session(user)
    add_message(session, "user", "Answer in English.")
    old = ProfileEntry.objects.get(user=user)
    message = add_message(session, "user", "Let's switch: everything in Dutch from here.")
    fake_openai.json_responder = lambda body: {
        "statements": [
            {
                "kind": "instruction",
                "text": "Answer in Dutch.",
                "slot": "language",
                "replaces": [old.id],
            },
        ]
    }
    (entry,) = profile_message_read(message=message)
    assert entry.text == "Answer in Dutch."
    old.refresh_from_db()
    assert old.status == "superseded" and old.superseded_by_id == entry.id
    prompt = fake_openai.bodies("/chat/completions")[-1]["messages"][1]["content"]
    assert f"{old.id} [instruction] Answer in English." in prompt


def test_export_carries_the_profile_and_erasure_removes_it(api, user):
    chat_the_profile_into_a_first_chat(user)
    exported = api.get("/api/v1/me/export").json()
    assert {row["text"] for row in exported["profile"]} >= {INSTRUCTION}
    response = api.delete("/api/v1/me", {"confirm": user.username}, format="json")
    assert response.status_code in (200, 202, 204), response.content
    assert not ProfileEntry.objects.filter(user_id=user.id).exists()


def test_task_sessions_of_a_chat_app_teach_the_profile_nothing(user):
    session = open_session(user, metadata={"app_tasks": True})
    add_message(session, "user", "Always reply with a JSON object with a title key.")
    assert not ProfileEntry.objects.filter(user=user).exists()


def test_a_commit_teaches_the_profile_what_its_facts_state(user):
    session = open_session(user)
    # Stored without its hooks, so only the commit's facts can teach the profile.
    message_append(
        user=user,
        session_id=session.id,
        role="user",
        content="My name is Priya and I live in Leeds.",
        run_hooks=False,
    )
    result = memory_commit(user=user, chat_session_id=session.id)
    assert result.facts
    made = profile_memories_read(memory_ids=[fact.id for fact in result.facts], origin="commit")
    facts = ProfileEntry.objects.filter(user=user, kind="fact", origin="commit")
    assert made == facts.count() >= 1
    assert {e.slot for e in facts} & {"name", "home"}


def test_the_profile_page_lists_adds_and_deletes_only_the_owners_entries(user, other_user):
    chat_the_profile_into_a_first_chat(user)
    theirs = ProfileEntry.objects.filter(user=user).first()
    owner, other = Client(), Client()
    owner.force_login(user)
    other.force_login(other_user)

    page = owner.get("/memories/profile/")
    assert page.status_code == 200 and INSTRUCTION in page.content.decode()
    assert INSTRUCTION not in other.get("/memories/profile/").content.decode()

    owner.post("/memories/profile/add/", {"kind": "fact", "text": "Home: Leeds"})
    assert ProfileEntry.objects.filter(user=user, text="Home: Leeds", origin="user").exists()
    other.post(f"/memories/profile/{theirs.id}/delete/")
    assert ProfileEntry.objects.filter(id=theirs.id).exists()
    owner.post(f"/memories/profile/{theirs.id}/delete/")
    assert not ProfileEntry.objects.filter(id=theirs.id).exists()
