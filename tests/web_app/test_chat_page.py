"""The chat page: login, the caller's own sessions only, the config the streaming script reads."""

from __future__ import annotations

import json
import re

import pytest

from sessions_app.services.sessions import session_close
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


def chat_config(response) -> dict:
    match = re.search(
        r'<script id="chat-config" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert match, "the page carries its configuration for chat.js"
    return json.loads(match.group(1))


def test_login_page_has_labelled_fields(client):
    response = client.get("/accounts/login/")
    html = response.content.decode()
    assert response.status_code == 200
    assert '<label for="id_username">Username</label>' in html
    assert '<label for="id_password">Password</label>' in html


def test_wrong_password_says_so(client, user):
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert "correct username and password" in response.content.decode()


def test_login_then_lands_on_the_chat(client, user):
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "pass-word-123"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/"
    assert "Commit to Memory" in response.content.decode()


@pytest.mark.parametrize("path", ["/", "/memories/", "/memories/sessions/", "/memories/imports/"])
def test_pages_need_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(f"/accounts/login/?next={path}")


def test_new_chat_page_lists_only_my_sessions(client, user, other_user):
    mine = open_session(user)
    add_message(mine, "user", "Planning a trip to Kyoto in April")
    theirs = open_session(other_user)
    add_message(theirs, "user", "Bob's secret surprise party plans")
    client.force_login(user)

    response = client.get("/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "Planning a trip to Kyoto in April" in html
    assert "surprise party" not in html
    config = chat_config(response)
    assert config["session_id"] is None
    assert config["urls"]["stream"] == "/api/v1/ai/chat/stream"
    assert config["urls"]["commit"] == "/api/v1/memory/commit"
    assert config["urls"]["chat_template"] == "/chat/__id__/"
    assert config["urls"]["context_template"] == "/api/v1/chat/sessions/__id__/context"


def test_open_session_page_carries_history_for_the_model(client, user):
    session = open_session(user)
    add_message(session, "user", "My email is alice@example.com, remember I like tea")
    add_message(session, "assistant", "Noted: tea.")
    client.force_login(user)

    response = client.get(f"/chat/{session.id}/")

    config = chat_config(response)
    assert config["session_id"] == str(session.id)
    assert config["session_status"] == "open"
    # The owner's own words come back as typed (the stream endpoint redacts before the model).
    assert config["history"] == [
        {"role": "user", "content": "My email is alice@example.com, remember I like tea"},
        {"role": "assistant", "content": "Noted: tea."},
    ]
    assert 'id="chat-banner" role="status" hidden' in response.content.decode()


def test_someone_elses_chat_is_not_found(client, user, other_user):
    theirs = open_session(other_user)
    client.force_login(user)
    assert client.get(f"/chat/{theirs.id}/").status_code == 404


def test_closed_chat_is_read_only(client, user):
    session = open_session(user)
    add_message(session, "user", "Hello there")
    session_close(user=user, session_id=session.id)
    client.force_login(user)

    response = client.get(f"/chat/{session.id}/")

    html = response.content.decode()
    assert "start a new chat" in html
    assert re.search(r'<textarea id="composer-input"[^>]*disabled', html)
    assert chat_config(response)["session_status"] == "closing"  # the task runs on commit


def test_closed_chat_disables_commit_and_says_why(client, user):
    session = open_session(user)
    add_message(session, "user", "I keep bees in my garden.")
    session_close(user=user, session_id=session.id)
    client.force_login(user)

    html = client.get(f"/chat/{session.id}/").content.decode()

    assert re.search(r'<button[^>]*id="commit-button"[^>]*disabled', html)
    assert re.search(
        r'<p class="hint commit-reason" id="commit-reason">Commit is off: this chat '
        r"has ended",
        html,
    )
    assert re.search(r'<button[^>]*id="end-chat-button"[^>]*hidden', html)


def test_open_chat_offers_end_chat_and_commit(client, user):
    session = open_session(user)
    add_message(session, "user", "I keep bees in my garden.")
    client.force_login(user)

    response = client.get(f"/chat/{session.id}/")

    html = response.content.decode()
    end_button = re.search(r'<button[^>]*id="end-chat-button"[^>]*>End chat</button>', html)
    assert end_button and "hidden" not in end_button.group(0)
    commit_button = re.search(r'<button[^>]*id="commit-button"[^>]*>', html).group(0)
    assert "disabled" not in commit_button
    assert re.search(r'id="commit-reason" hidden', html)
    assert chat_config(response)["urls"]["close"] == "/api/v1/chat/close"


def test_verbose_logging_turns_the_debug_view_on_by_default(client, user):
    from context_app.models import ContextSettings

    settings_row = ContextSettings.load()
    settings_row.verbose_logging = True
    settings_row.save()
    client.force_login(user)

    config = chat_config(client.get("/"))

    assert config["verbose_logging"] is True
