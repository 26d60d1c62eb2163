"""Browser apps on another origin: the API and /v1 answer them only when their origin is listed
(MNEMO_CORS_ORIGINS), errors included; the pages never."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

APP = "https://chat.example.com"


@pytest.fixture
def allowed(settings):
    settings.CORS_ALLOWED_ORIGINS = [APP]


def preflight(client, path: str, origin: str):
    return client.options(
        path,
        HTTP_ORIGIN=origin,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type, x-mnemo-session-id",
    )


def test_a_listed_origin_may_call_the_openai_endpoint_and_the_api(client, allowed):
    for path in ("/v1/chat/completions", "/api/v1/memory/search"):
        response = preflight(client, path, APP)
        assert response.status_code == 200
        assert response["Access-Control-Allow-Origin"] == APP
        assert "x-mnemo-session-id" in response["Access-Control-Allow-Headers"]
        assert "Access-Control-Allow-Credentials" not in response  # tokens, never cookies


def test_an_error_reaches_the_browser_app_with_its_cors_headers(client, allowed):
    response = client.post(
        "/api/v1/memory/search", data="{", content_type="application/json", HTTP_ORIGIN=APP
    )
    assert response.status_code == 401  # no token: the app can read why
    assert response["Access-Control-Allow-Origin"] == APP
    assert "x-mnemo-context" in response["Access-Control-Expose-Headers"]


def test_other_origins_and_the_pages_get_no_cors_headers(client, allowed):
    assert "Access-Control-Allow-Origin" not in preflight(
        client, "/v1/chat/completions", "https://evil.example"
    )
    assert "Access-Control-Allow-Origin" not in preflight(client, "/memories/", APP)


def test_no_origin_is_allowed_by_default(client):
    assert "Access-Control-Allow-Origin" not in preflight(client, "/v1/chat/completions", APP)
