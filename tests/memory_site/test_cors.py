"""Browser apps on another origin: the API, /v1 and /mcp answer them only when their origin is
listed (MNEMO_CORS_ORIGINS), errors included; the pages never. Through the real ASGI app."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)

APP = "https://chat.example.com"


@pytest.fixture
def allowed(settings):
    settings.MNEMO_CORS_ORIGINS = [APP]


def preflight(url: str, origin: str) -> httpx.Response:
    return httpx.options(
        url,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, x-mnemo-session-id",
        },
    )


def test_a_listed_origin_may_call_the_api_the_openai_endpoint_and_the_mcp_server(live_url, allowed):
    for path in ("/api/v1/memory/search", "/v1/chat/completions", "/mcp"):
        response = preflight(live_url + path, APP)
        assert response.status_code == 200, path
        assert response.headers["access-control-allow-origin"] == APP
        assert "x-mnemo-session-id" in response.headers["access-control-allow-headers"]
        assert "access-control-allow-credentials" not in response.headers  # tokens, not cookies


def test_errors_reach_the_browser_app_with_their_cors_headers(live_url, allowed):
    unauthenticated = httpx.post(
        f"{live_url}/v1/chat/completions", json={"model": "x"}, headers={"Origin": APP}
    )
    too_big = httpx.post(
        f"{live_url}/api/v1/memory/search",
        content=b"x" * (2 * 1024 * 1024),
        headers={"Origin": APP, "Content-Type": "application/json"},
    )
    for response, status in ((unauthenticated, 401), (too_big, 413)):
        assert response.status_code == status
        assert response.headers["access-control-allow-origin"] == APP
        assert "x-mnemo-context" in response.headers["access-control-expose-headers"]


def test_other_origins_and_the_pages_get_no_cors_headers(live_url, allowed):
    evil = preflight(f"{live_url}/v1/chat/completions", "https://evil.example")
    assert "access-control-allow-origin" not in evil.headers
    page = httpx.get(f"{live_url}/accounts/login/", headers={"Origin": APP})
    assert "access-control-allow-origin" not in page.headers


def test_no_origin_is_allowed_by_default(live_url):
    response = preflight(f"{live_url}/v1/chat/completions", APP)
    assert "access-control-allow-origin" not in response.headers
