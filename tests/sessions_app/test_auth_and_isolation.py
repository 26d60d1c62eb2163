"""Every endpoint needs credentials, and another user's session is 404 everywhere."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

SESSION_POSTS = [
    ("/api/v1/chat/heartbeat", {}),
    ("/api/v1/chat/visibility", {"visible": True}),
    ("/api/v1/chat/close", {}),
    ("/api/v1/chat/messages", {"role": "user", "content": "hi"}),
]


@pytest.mark.parametrize(
    "method,path",
    [
        ("post", "/api/v1/chat/new"),
        ("post", "/api/v1/chat/heartbeat"),
        ("post", "/api/v1/chat/visibility"),
        ("post", "/api/v1/chat/close"),
        ("post", "/api/v1/chat/messages"),
        ("get", "/api/v1/chat/sessions"),
        ("get", "/api/v1/chat/sessions/00000000-0000-0000-0000-000000000000"),
    ],
)
def test_every_endpoint_requires_auth(anon_api, method, path):
    response = (
        getattr(anon_api, method)(path, {}, format="json")
        if method == "post"
        else anon_api.get(path)
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_bad_token_is_401(anon_api):
    anon_api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = anon_api.get("/api/v1/chat/sessions")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_session_login_also_works(client, user):
    client.force_login(user)
    assert client.get("/api/v1/chat/sessions").status_code == 200


@pytest.mark.parametrize("path,extra", SESSION_POSTS)
def test_other_users_session_is_404_on_every_endpoint(api, other_api, path, extra):
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    response = other_api.post(path, {"session_id": session_id, **extra}, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "session_not_found"


def test_other_users_session_detail_and_list(api, other_api):
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    assert other_api.get(f"/api/v1/chat/sessions/{session_id}").status_code == 404
    assert other_api.get("/api/v1/chat/sessions").json()["count"] == 0


def test_closing_another_users_session_via_new_is_404(api, other_api):
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    response = other_api.post("/api/v1/chat/new", {"close_session_id": session_id}, format="json")
    assert response.status_code == 404
    from sessions_app.models import ChatSession

    assert ChatSession.objects.get(id=session_id).status == "open"
    assert ChatSession.objects.count() == 1  # nothing half-written


def test_health_needs_no_auth_and_reports_components(anon_api):
    response = anon_api.get("/api/health")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "vector": "ok", "worker": "sync"}


@pytest.mark.parametrize(
    "method,path",
    [
        ("get", "/api/v1/chat/sessions"),
        ("get", "/api/v1/memories"),
        ("get", "/api/v1/memory/stats"),
        ("post", "/api/v1/memory/search"),
        ("get", "/api/v1/usage"),
        ("get", "/api/v1/imports"),
        ("post", "/api/v1/chat/new"),
        ("post", "/api/v1/memory/commit"),
    ],
)
@pytest.mark.parametrize("username", ["bob", "nobody"])
def test_naming_another_user_is_403_not_your_own_data(api, other_user, method, path, username):
    joiner = "&" if "?" in path else "?"
    url = f"{path}{joiner}user={username}"

    response = api.post(url, {}, format="json") if method == "post" else api.get(url)

    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "other_user_forbidden"
    assert error["field"] == "user"
    assert "only serves your own data" in error["message"]


def test_naming_yourself_in_user_is_allowed(api, user):
    response = api.get(f"/api/v1/chat/sessions?user={user.username}")

    assert response.status_code == 200


def test_anonymous_naming_a_user_is_still_401(anon_api, other_user):
    response = anon_api.get("/api/v1/memories?user=bob")

    assert response.status_code == 401
