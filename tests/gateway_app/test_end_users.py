"""One app key, many end users: Open WebUI's signed user JWT and forwarded user headers,
LibreChat's custom user-id header and OpenAI's `user` field each give an end user a memory of
their own on /v1, the REST API and MCP; a forged, expired or unaccepted identity is a 401."""

from __future__ import annotations

import asyncio
import json
import time

import httpx2
import jwt
import pytest
from django.core.management import call_command
from django.test import Client
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from gateway_app.models import EndUser
from gateway_app.services.end_users import end_user_grant_set
from ingestion_app.models import MemoryItem
from sessions_app.models import ChatSession, Message
from tests.factories import make_user
from tests.gateway_app.conftest import token_for

pytestmark = pytest.mark.django_db

URL = "/v1/chat/completions"
SECRET = "open-webui-signing-secret-0123456789abcdef"


def signed(sub: str, *, secret: str = SECRET, expires_in: int = 300, iss: str = "open-webui"):
    """The X-OpenWebUI-User-Jwt Open WebUI sends with FORWARD_USER_INFO_HEADER_JWT_SECRET."""
    now = int(time.time())
    claims = {"sub": sub, "email": f"{sub}@example.com", "name": sub.title(), "role": "user"}
    return jwt.encode({**claims, "iss": iss, "iat": now, "exp": now + expires_in}, secret, "HS256")


def chat(client, key, text, *, user_field=None, **headers):
    body = {"model": "fake-model", "messages": [{"role": "user", "content": text}]}
    if user_field is not None:
        body["user"] = user_field
    return client.post(
        URL,
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
        **headers,
    )


@pytest.fixture
def app_key(db):
    """The one key an Open WebUI connection holds, allowed to act for its end users (JWT)."""
    app = make_user("openwebui")
    end_user_grant_set(app_user=app, mode="jwt", jwt_secret=SECRET)
    return app, token_for(app)


def session_owner_of_last_turn():
    return Message.objects.filter(role="user").latest("id").session.user


def test_two_end_users_of_one_key_get_separate_memories(app_key, upstream):
    app, key = app_key
    client = Client()
    upstream.reply_text = "Congratulations!"
    first = chat(
        client, key, "Our wedding is in Porto in June.", HTTP_X_OPENWEBUI_USER_JWT=signed("u-1")
    )
    assert first.status_code == 200, first.content
    anna = session_owner_of_last_turn()
    upstream.requests.clear()
    second = chat(client, key, "Where is our wedding?", HTTP_X_OPENWEBUI_USER_JWT=signed("u-2"))
    assert second.status_code == 200
    ben = session_owner_of_last_turn()

    assert anna != ben and app not in (anna, ben)
    assert {row.external_id: row.user for row in EndUser.objects.filter(app_user=app)} == {
        "u-1": anna,
        "u-2": ben,
    }
    assert EndUser.objects.get(external_id="u-1").email == "u-1@example.com"
    # Nothing of the first end user's reached the second one's model call.
    sent = json.dumps(upstream.bodies("/chat/completions")[-1])
    assert "Porto" not in sent
    assert not MemoryItem.objects.filter(user=ben, content__contains="Porto").exists()
    assert not ChatSession.objects.filter(user=app).exists()


def test_the_same_end_user_comes_back_to_the_same_memory(app_key, upstream):
    _, key = app_key
    client = Client()
    chat(client, key, "I play the cello.", HTTP_X_OPENWEBUI_USER_JWT=signed("u-1"))
    chat(client, key, "I also sing.", HTTP_X_OPENWEBUI_USER_JWT=signed("u-1"))
    assert EndUser.objects.count() == 1
    assert ChatSession.objects.filter(user=EndUser.objects.get().user).exists()


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (signed("u-1", secret="not-the-apps-secret-but-long-enough"), "invalid"),
        (signed("u-1", expires_in=-120), "expired"),
        (signed("u-1", iss="somebody-else"), "issuer"),
        ("not.a.jwt", "invalid"),
    ],
)
def test_a_forged_expired_or_foreign_jwt_is_a_401_and_stores_nothing(
    app_key, upstream, token, reason
):
    _, key = app_key
    response = chat(Client(), key, "hello", HTTP_X_OPENWEBUI_USER_JWT=token)
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "invalid_end_user" and reason in error["message"]
    assert set(error) == {"message", "type", "param", "code"}
    assert not Message.objects.exists() and not EndUser.objects.exists()
    assert upstream.bodies("/chat/completions") == []


def test_a_jwt_key_refuses_a_plain_user_id_header(app_key, upstream):
    _, key = app_key
    response = chat(Client(), key, "hello", HTTP_X_OPENWEBUI_USER_ID="u-1")
    assert response.status_code == 401
    assert "signed JWT" in response.json()["error"]["message"]
    assert not Message.objects.exists()


def test_a_key_without_the_right_stays_its_own_user(user, upstream):
    key = token_for(user)
    response = chat(
        Client(),
        key,
        "hello",
        user_field="someone",
        HTTP_X_OPENWEBUI_USER_ID="u-1",
        HTTP_X_OPENWEBUI_USER_JWT=signed("u-1"),
    )
    assert response.status_code == 200
    assert session_owner_of_last_turn() == user
    assert not EndUser.objects.exists()


def test_headers_mode_takes_open_webui_librechat_and_the_user_field(upstream):
    openwebui = make_user("openwebui")
    end_user_grant_set(app_user=openwebui, mode="headers")
    librechat = make_user("librechat")
    end_user_grant_set(app_user=librechat, mode="headers", user_id_header="X-LibreChat-User-Id")
    client = Client()

    chat(client, token_for(openwebui), "hi", HTTP_X_OPENWEBUI_USER_ID="42")
    by_header = session_owner_of_last_turn()
    chat(client, token_for(openwebui), "hi", user_field="43")
    by_field = session_owner_of_last_turn()
    chat(client, token_for(librechat), "hi", HTTP_X_LIBRECHAT_USER_ID="42")
    librechat_42 = session_owner_of_last_turn()

    assert len({by_header, by_field, librechat_42}) == 3  # same id, other app: another user
    assert set(EndUser.objects.values_list("app_user__username", "external_id")) == {
        ("openwebui", "42"),
        ("openwebui", "43"),
        ("librechat", "42"),
    }


def test_the_rest_api_lists_and_reads_one_end_users_data_with_the_apps_key(app_key, upstream):
    _, key = app_key
    client = Client()
    chat(client, key, "I keep bees.", HTTP_X_OPENWEBUI_USER_JWT=signed("u-1"))
    chat(client, key, "I keep goats.", HTTP_X_OPENWEBUI_USER_JWT=signed("u-2"))
    goats = Message.objects.filter(role="user").latest("id").session

    def api(path, sub):
        return client.get(
            path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_X_OPENWEBUI_USER_JWT=signed(sub)
        )

    listed = api("/api/v1/chat/sessions", "u-1")
    assert listed.status_code == 200
    assert [row["session_id"] for row in listed.json()["results"]] != []
    assert str(goats.id) not in json.dumps(listed.json())
    assert api(f"/api/v1/chat/sessions/{goats.id}", "u-1").status_code == 404
    assert api(f"/api/v1/chat/sessions/{goats.id}", "u-2").status_code == 200
    forged = client.get(
        "/api/v1/chat/sessions",
        HTTP_AUTHORIZATION=f"Token {key}",
        HTTP_X_OPENWEBUI_USER_JWT=signed("u-2", secret="forged-secret-of-the-same-length-x"),
    )
    assert forged.status_code == 401


def test_issue_token_grants_the_right(db, capsys):
    call_command("issue_token", "lc", "--create-user", "--end-users", "headers")
    key = capsys.readouterr().out.strip()
    assert EndUser.objects.count() == 0
    from gateway_app.models import EndUserGrant

    grant = EndUserGrant.objects.get(app_user__username="lc")
    assert grant.mode == "headers" and token_for(grant.app_user) == key
    with pytest.raises(Exception, match="needs --jwt-secret"):
        call_command("issue_token", "ow", "--create-user", "--end-users", "jwt")


@pytest.mark.django_db(transaction=True)
def test_mcp_tools_see_only_the_end_user_the_jwt_names(live_url, fake_embedder):
    app = make_user("openwebui")
    end_user_grant_set(app_user=app, mode="jwt", jwt_secret=SECRET)
    key = token_for(app)

    def transport(sub, secret=SECRET):
        headers = {
            "Authorization": f"Bearer {key}",
            "X-OpenWebUI-User-Jwt": signed(sub, secret=secret),
        }
        return streamable_http_client(
            f"{live_url}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=20)
        )

    async def run():
        async with McpClient(transport("u-1")) as client:
            await client.call_tool("add_memory", {"text": "The user's locker code is 4417."})
        async with McpClient(transport("u-2")) as client:
            found = await client.call_tool("search_memory", {"query": "locker code"})
        async with McpClient(transport("u-1")) as client:
            own = await client.call_tool("search_memory", {"query": "locker code"})
        return json.loads(found.content[0].text), json.loads(own.content[0].text)

    found, own = asyncio.run(run())
    assert found["results"] == []
    assert any("4417" in result["content"] for result in own["results"])
    forged = httpx2.post(
        f"{live_url}/mcp",
        json={},
        headers={
            "Authorization": f"Bearer {key}",
            "X-OpenWebUI-User-Jwt": signed("u-1", secret="x" * 40),
        },
    )
    assert forged.status_code == 401 and forged.json()["error"]["code"] == "invalid_end_user"


def test_librechats_request_shapes(upstream):
    """LibreChat's custom endpoint as docs/how-to/librechat.md configures it: the user id and
    conversation id in custom headers, the `user` field, and a "### Task:" title prompt."""
    app = make_user("librechat")
    end_user_grant_set(app_user=app, mode="headers", user_id_header="X-LibreChat-User-Id")
    client, key = Client(), token_for(app)
    upstream.reply_text = "Try the Douro valley."

    def librechat(messages, user_id, conversation):
        return client.post(
            URL,
            data=json.dumps({"model": "m", "messages": messages, "user": user_id}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
            HTTP_X_LIBRECHAT_USER_ID=user_id,
            HTTP_X_MNEMO_CONVERSATION_ID=conversation,
        )

    ask = [{"role": "user", "content": "Where should I go for wine in Portugal?"}]
    assert librechat(ask, "lc-1", "conv-a").status_code == 200
    assert librechat(ask, "lc-2", "conv-b").status_code == 200
    title = [{"role": "user", "content": "### Task:\nWrite a concise title:\n\nwine in Portugal"}]
    assert librechat(title, "lc-1", "conv-a").status_code == 200

    users = {row.external_id: row.user for row in EndUser.objects.filter(app_user=app)}
    assert set(users) == {"lc-1", "lc-2"}
    for user in users.values():
        chats = ChatSession.objects.filter(user=user).exclude(
            metadata__contains={"app_tasks": True}
        )
        assert chats.count() == 1
    assert not Message.objects.filter(session__metadata__contains={"app_tasks": True}).exists()
