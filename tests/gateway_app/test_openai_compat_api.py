"""The /v1 paths' edges through the test client: OpenAI's error shape, the schema, limits."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import Client

from ingestion_app.models import MemoryItem
from memory_site.asgi import application
from sessions_app.models import ChatSession, Message
from tests.gateway_app.conftest import token_for

pytestmark = pytest.mark.django_db

URL = "/v1/chat/completions"
OPENAI_ERROR_KEYS = {"message", "type", "param", "code"}


def post(client, body, key=None, **headers):
    if key:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(URL, data=data, content_type="application/json", **headers)


def test_input_errors_name_the_parameter_in_openai_shape(user, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    client, key = Client(), token_for(user)
    cases = [
        ("{not json", None),
        ({"model": "m"}, "messages"),
        ({"model": "m", "messages": []}, "messages"),
        ({"model": 5, "messages": [{"role": "user", "content": "hi"}]}, "model"),
        ({"model": "m" * 5000, "messages": [{"role": "user", "content": "hi"}]}, "model"),
        ({"model": "m", "messages": ["hi"]}, "messages[0]"),
        ({"model": "m", "messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        (
            {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": "yes"},
            "stream",
        ),
    ]
    for body, param in cases:
        response = post(client, body, key)
        assert response.status_code == 400, body
        error = response.json()["error"]
        assert set(error) == OPENAI_ERROR_KEYS
        assert error["type"] == "invalid_request_error"
        assert error["param"] == param
        if isinstance(body, dict) and len(str(body.get("model"))) > 256:
            assert "at most 256 characters" in error["message"]
    assert not ChatSession.objects.exists()


def test_a_bad_session_header_or_no_upstream_stores_nothing(user, other_user, settings):
    client, key = Client(), token_for(user)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    response = post(client, body, key)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "upstream_not_configured"

    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    response = post(client, body, key, HTTP_X_MNEMO_SESSION_ID="not-a-uuid")
    assert response.status_code == 400 and response.json()["error"]["param"] == "X-Mnemo-Session-Id"
    foreign = ChatSession.objects.create(user=other_user)
    response = post(client, body, key, HTTP_X_MNEMO_SESSION_ID=str(foreign.id))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "session_not_found"
    assert not Message.objects.exists()


def test_a_wrong_key_is_a_401_whatever_else_is_wrong(user, settings):
    """The key is checked first (as OpenAI does): without a valid one a caller learns nothing
    about its request, the session it names or the server's configuration."""
    client = Client()
    foreign = ChatSession.objects.create(user=user)
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    for body, headers in [
        ("{not json", {}),
        ({"model": "m", "messages": []}, {}),
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, {}),
        (
            {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            {"HTTP_X_MNEMO_SESSION_ID": str(foreign.id)},
        ),
    ]:
        response = post(client, body, "not-a-token", **headers)
        assert response.status_code == 401, (body, response.content)
        assert response.json()["error"]["code"] == "invalid_api_key"
    assert not Message.objects.exists()


def test_an_unreachable_upstream_is_a_502_and_leaves_no_session(user, fake_embedder):
    fake_embedder.stop()  # the configured upstream is gone (embeddings fail too, and are logged)
    response = post(
        Client(),
        {"model": "m", "messages": [{"role": "user", "content": "hello there"}]},
        token_for(user),
        HTTP_X_MNEMO_MEMORY="off",
    )
    assert response.status_code == 502
    assert response.json()["error"]["type"] == "api_error"
    assert "X-Mnemo-Session-Id" not in response
    # The call opened the session: it is gone with its question, nothing was indexed.
    assert not ChatSession.objects.exists() and not Message.objects.exists()
    assert not MemoryItem.objects.exists()


def test_a_failed_turn_of_an_ongoing_chat_keeps_its_question(user, fake_embedder):
    client, key = Client(), token_for(user)
    fake_embedder.reply_text = "Hello!"
    first = [{"role": "user", "content": "hello there"}]
    assert post(client, {"model": "m", "messages": first}, key).status_code == 200
    fake_embedder.stop()
    follow_up = [
        *first,
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "and now?"},
    ]
    response = post(client, {"model": "m", "messages": follow_up}, key, HTTP_X_MNEMO_MEMORY="off")
    assert response.status_code == 502
    session = ChatSession.objects.get()
    assert response["X-Mnemo-Session-Id"] == str(session.id)
    assert list(Message.objects.order_by("id").values_list("role", flat=True)) == [
        "user",
        "assistant",
        "user",
    ]


def test_the_model_list_stays_the_same_while_the_upstream_is_down(user, fake_embedder, settings):
    from django.core.cache import caches

    cache = caches["tasks"]
    cache.clear()
    client, key = Client(), token_for(user)
    fake_embedder.models = ["llama3.1:8b", "qwen2.5:7b"]
    listed = client.get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert [m["id"] for m in listed.json()["data"]] == ["llama3.1:8b", "qwen2.5:7b"]
    fake_embedder.stop()
    again = client.get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert again.status_code == 200 and again.json() == listed.json()
    cache.clear()  # never seen: a clear error, not a made-up model
    unknown = client.get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert unknown.status_code == 503
    assert "MNEMO_GATEWAY_MODELS" in unknown.json()["error"]["message"]
    settings.MNEMO_GATEWAY_MODELS = ["mnemo-chat"]
    configured = client.get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert [m["id"] for m in configured.json()["data"]] == ["mnemo-chat"]


def test_other_paths_and_methods_answer_in_openai_shape(user):
    client = Client()
    response = client.get(URL, HTTP_AUTHORIZATION=f"Bearer {token_for(user)}")
    assert response.status_code == 405
    response = client.get("/v1/embeddings")
    assert response.status_code == 404 and set(response.json()["error"]) == OPENAI_ERROR_KEYS
    response = client.get("/v1/models")
    assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_api_key"


def test_oversized_bodies_get_openai_shape_on_v1_only():
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": URL,
        "headers": [(b"content-length", b"999999999")],
    }
    asyncio.run(application(scope, receive, send))
    assert sent[0]["status"] == 413
    assert set(json.loads(sent[1]["body"])["error"]) == OPENAI_ERROR_KEYS | {"code"}


def _asgi_call(path: str, query: bytes = b"", method: str = "POST") -> tuple[int, dict, dict]:
    """One request through the production ASGI app: (status, headers, JSON body)."""
    sent, requests = [], [{"type": "http.request", "body": b"{}", "more_body": False}]

    async def receive():
        if requests:
            return requests.pop()
        await asyncio.Event().wait()  # the client stays connected

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"content-length", b"2"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    asyncio.run(application(scope, receive, send))
    headers = {name.decode().lower(): value.decode() for name, value in sent[0]["headers"]}
    return sent[0]["status"], headers, json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


def test_v1_paths_run_their_own_middleware_stack_in_openai_shape():
    # A NUL in a query parameter is refused before the view, in OpenAI's shape on /v1/ ...
    status, headers, body = _asgi_call(URL, b"note=%00")
    assert status == 400
    assert body["error"] == {
        "message": "note: must not contain NUL characters or lone surrogates.",
        "type": "invalid_request_error",
        "param": "note",
        "code": "invalid_characters",
    }
    # ... while the rest of the site keeps its own guard and error envelope ...
    status, headers, body = _asgi_call("/api/v1/memory/search", b"note=%00")
    assert status == 400 and body["error"]["code"] == "invalid_characters"
    assert body["error"]["field"] == "note" and "type" not in body["error"]
    # ... and its browser middleware, which the /v1/ views do without (no frame headers).
    status, headers, body = _asgi_call("/v1/models", method="GET")
    assert status == 401 and body["error"]["code"] == "invalid_api_key"
    assert "x-frame-options" not in headers
    status, headers, body = _asgi_call("/api/v1/memory/stats", method="GET")
    assert status == 401 and headers["x-frame-options"] == "DENY"


def test_schema_documents_the_v1_endpoints(api):
    schema = api.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/v1/chat/completions"]["post"]
    assert "text/event-stream" in operation["responses"]["200"]["content"]
    assert {p["name"] for p in operation["parameters"]} == {"X-Mnemo-Session-Id", "X-Mnemo-Memory"}
    assert "/v1/models" in schema["paths"]
    for operations in (schema["paths"]["/v1/chat/completions"], schema["paths"]["/v1/models"]):
        for operation in operations.values():
            for status, response in operation["responses"].items():
                if status != "200":
                    reference = response["content"]["application/json"]["schema"]["$ref"]
                    assert reference.endswith("/OpenAIError")
    assert "/mcp" in schema["info"]["description"]
