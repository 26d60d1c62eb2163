"""Hostile input gets a 4xx naming the problem, and nothing is stored."""

from __future__ import annotations

import pytest

from sessions_app.models import ChatSession, Message

pytestmark = pytest.mark.django_db


def post_raw(api, path, raw: bytes, content_type="application/json"):
    return api.generic("POST", path, raw, content_type=content_type)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/chat/new",
        "/api/v1/chat/heartbeat",
        "/api/v1/chat/visibility",
        "/api/v1/chat/close",
        "/api/v1/chat/messages",
    ],
)
def test_malformed_json_is_400(api, path):
    response = post_raw(api, path, b'{"session_id": ')
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


@pytest.mark.parametrize(
    "path,body,field",
    [
        ("/api/v1/chat/new", {"title": 5}, "title"),
        ("/api/v1/chat/new", {"metadata": ["not", "an", "object"]}, "metadata"),
        ("/api/v1/chat/new", {"close_session_id": "nope"}, "close_session_id"),
        ("/api/v1/chat/heartbeat", {"session_id": 12}, "session_id"),
        ("/api/v1/chat/heartbeat", {}, "session_id"),
        (
            "/api/v1/chat/visibility",
            {"session_id": "00000000-0000-0000-0000-000000000000", "visible": "yes"},
            "visible",
        ),
        ("/api/v1/chat/close", {"session_id": "not-a-uuid"}, "session_id"),
        (
            "/api/v1/chat/messages",
            {
                "session_id": "00000000-0000-0000-0000-000000000000",
                "role": "wizard",
                "content": "x",
            },
            "role",
        ),
        (
            "/api/v1/chat/messages",
            {"session_id": "00000000-0000-0000-0000-000000000000", "role": "user", "content": 42},
            "content",
        ),
        (
            "/api/v1/chat/messages",
            {
                "session_id": "00000000-0000-0000-0000-000000000000",
                "role": "user",
                "content": "   ",
            },
            "content",
        ),
    ],
)
def test_wrong_types_name_the_field(api, path, body, field):
    response = api.post(path, body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_input"
    assert error["field"] == field
    assert field in error["message"]


def test_json_array_body_is_400(api):
    response = post_raw(api, "/api/v1/chat/new", b"[1, 2]")
    assert response.status_code == 400


def test_unknown_session_is_404(api):
    response = api.post(
        "/api/v1/chat/heartbeat",
        {"session_id": "00000000-0000-0000-0000-000000000000"},
        format="json",
    )
    assert response.status_code == 404


def test_body_over_limit_is_413_and_stores_nothing(api, settings):
    settings.MNEMO_MAX_BODY_BYTES = 2048
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    response = api.post(
        "/api/v1/chat/messages",
        {"session_id": session_id, "role": "user", "content": "x" * 5000},
        format="json",
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert Message.objects.count() == 0
    assert ChatSession.objects.count() == 1


def test_unknown_api_path_is_json_404(api):
    response = api.get("/api/v1/does-not-exist")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
