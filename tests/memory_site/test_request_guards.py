"""The error contract on every endpoint: bad characters, content types, filters, a dead database."""

from __future__ import annotations

import uuid

import pytest
from django.db import OperationalError
from django.db.backends.postgresql.base import DatabaseWrapper
from drf_spectacular.generators import SchemaGenerator

from ingestion_app.models import MemoryItem
from memory_site.middleware import QUERY_PARAMETERS
from sessions_app.models import ChatSession
from tests.factories import open_session

pytestmark = pytest.mark.django_db

SESSION = "00000000-0000-0000-0000-000000000000"
GET_PATHS = [
    "/api/v1/memory/stats",
    "/api/v1/chat/sessions",
    "/api/v1/summaries/context",
    "/api/v1/memories",
]
# One call per operation, with a body each accepts (the database is never reached when down).
EVERY_OPERATION = [
    ("get", "/api/health", None),
    ("post", "/api/v1/chat/new", {}),
    ("post", "/api/v1/chat/heartbeat", {"session_id": SESSION}),
    ("post", "/api/v1/chat/visibility", {"session_id": SESSION, "visible": True}),
    ("post", "/api/v1/chat/close", {"session_id": SESSION}),
    ("post", "/api/v1/chat/messages", {"session_id": SESSION, "role": "user", "content": "hi"}),
    ("get", "/api/v1/chat/sessions", None),
    ("get", f"/api/v1/chat/sessions/{SESSION}", None),
    ("get", f"/api/v1/chat/sessions/{SESSION}/context", None),
    ("get", f"/api/v1/imports/{SESSION}", None),
    ("post", "/api/v1/knowledge/ingest", {"text": "A note."}),
    ("post", "/api/v1/memory/commit", {"session_id": SESSION}),
    ("get", "/api/v1/memories", None),
    ("get", "/api/v1/memories/1", None),
    ("patch", "/api/v1/memories/1", {"content": "x"}),
    ("delete", "/api/v1/memories/1", None),
    ("get", "/api/v1/memories/1/history", None),
    ("get", "/api/v1/me/export", None),
    ("delete", "/api/v1/me", {"confirm": "alice"}),
    ("get", "/api/v1/usage", None),
    ("post", "/api/v1/memory/search", {"query": "paris"}),
    ("get", "/api/v1/memory/stats", None),
    ("post", "/api/v1/ai/chat/stream", {"messages": [{"role": "user", "content": "hi"}]}),
    ("get", "/api/v1/summaries/context", None),
]


def call(client, method, path, body):
    if body is None:
        return getattr(client, method)(path)
    return getattr(client, method)(path, body, format="json")


# --- invalid characters ----------------------------------------------------------------------


@pytest.mark.parametrize("path", GET_PATHS)
@pytest.mark.parametrize("bad", ["a\x00b", "\x00"])
def test_nul_in_a_query_parameter_is_400_naming_it(api, path, bad):
    response = api.get(path, {"app_id": bad})
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_characters", "app_id")


def test_nul_in_the_path_or_a_header_is_400(api):
    response = api.get("/api/v1/chat/sessions/\x00")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "path"
    response = api.get("/api/v1/chat/sessions", HTTP_X_REGGIE_CONTEXT="a\x00")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "X-Reggie-Context"


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud800", "a\\udfffb"])
@pytest.mark.parametrize(
    "path,template,field",
    [
        ("/api/v1/chat/new", '{"title": "%s"}', "title"),
        ("/api/v1/chat/new", '{"metadata": {"k": ["ok", "%s"]}}', "metadata.k[1]"),
        ("/api/v1/chat/new", '{"metadata": {"%s": 1}}', "metadata"),
        (
            "/api/v1/ai/chat/stream",
            '{"messages": [{"role": "user", "content": "%s"}]}',
            "messages[0].content",
        ),
        ("/api/v1/memory/search", '{"query": "x", "filters": {"project_id": "%s"}}', None),
        ("/api/v1/knowledge/ingest", '{"text": "%s"}', "text"),
        ("/api/v1/memory/commit", '{"session_id": "%s"}', "session_id"),
        ("/api/v1/me", '{"confirm": "%s"}', "confirm"),
    ],
)
def test_nul_or_lone_surrogate_in_a_json_body_is_400_naming_the_field(
    api, user, path, template, field, escape
):
    body = (template % escape).encode()
    method = "DELETE" if path == "/api/v1/me" else "POST"
    response = api.generic(method, path, body, content_type="application/json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_characters"
    assert error["field"] == (field or "filters.project_id")
    assert ChatSession.objects.count() == 0
    assert user.__class__.objects.filter(pk=user.pk).exists()


def test_nul_in_a_multipart_field_is_400_naming_it(api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("conversations.json", b"[]", content_type="application/json")
    response = api.post(
        "/api/v1/imports", {"files": [upload], "project_id": "p\x00"}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == "project_id"
    upload = SimpleUploadedFile("notes.txt", b"text", content_type="text/plain")
    response = api.post(
        "/api/v1/knowledge/ingest", {"file": upload, "title": "\x00"}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == "title"


# --- content types ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/api/v1/chat/new", "/api/v1/memory/search", "/api/v1/ai/chat/stream"]
)
@pytest.mark.parametrize(
    "content_type", ["", "application/x-www-form-urlencoded", "text/plain", "multipart/form-data"]
)
def test_json_body_with_a_missing_or_wrong_content_type_is_415(api, path, content_type):
    body = b'{"title": "Trip", "query": "x", "messages": [{"role": "user", "content": "hi"}]}'
    response = api.generic("POST", path, body, content_type=content_type)
    assert response.status_code == 415, (content_type, response.content)
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert ChatSession.objects.count() == 0


def test_an_empty_body_without_content_type_still_opens_a_session(api):
    response = api.generic("POST", "/api/v1/chat/new", b"", content_type="")
    assert response.status_code == 201, response.content


# --- query filters ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", GET_PATHS + ["/api/v1/usage", f"/api/v1/chat/sessions/{SESSION}"])
def test_unknown_query_parameter_is_400_naming_it(api, path):
    response = api.get(path, {"sourse": "fact"})
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("unknown_parameter", "sourse")


def test_memories_filter_by_source_and_by_session_id(api, user):
    session = open_session(user)
    base = {"user": user, "app_id": "default", "content": "x"}
    fact = MemoryItem.objects.create(**base, source="fact", chat_session_id=session.id)
    chunk = MemoryItem.objects.create(**base, source="chunk")

    def ids(params):
        response = api.get("/api/v1/memories", params)
        assert response.status_code == 200, response.content
        return {item["id"] for item in response.json()["results"]}

    assert ids({}) == {fact.id, chunk.id}
    assert ids({"source": "fact"}) == {fact.id}
    assert ids({"source": "chunk"}) == {chunk.id}
    assert ids({"role": "fact"}) == {fact.id}
    assert ids({"session_id": str(session.id)}) == {fact.id}
    assert ids({"chat_session_id": str(session.id)}) == {fact.id}
    assert ids({"session_id": str(uuid.uuid4())}) == set()
    response = api.get("/api/v1/memories", {"source": "nonsense"})
    assert response.status_code == 400 and response.json()["error"]["field"] == "source"


def test_search_filters_take_session_id_and_the_alias(api, user, fake_embedder):
    for key in ("session_id", "chat_session_id"):
        response = api.post(
            "/api/v1/memory/search",
            {"query": "paris", "filters": {key: SESSION}},
            format="json",
        )
        assert response.status_code == 200, response.content


def test_allowed_query_parameters_match_the_schema():
    """The middleware's table and the documented query parameters are the same lists."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    documented = {}
    for path, operations in schema["paths"].items():
        get = operations.get("get")
        if not get or not path.startswith("/api/v1/"):
            continue
        documented[path] = sorted(
            p["name"] for p in get.get("parameters", []) if p["in"] == "query"
        )
    by_name = {
        "/api/v1/chat/sessions": "chat-sessions",
        "/api/v1/memories": "memories",
        "/api/v1/memory/stats": "memory-stats",
        "/api/v1/entities": "entities",
        "/api/v1/profile": "profile",
        "/api/v1/summaries/context": "summaries-context",
        "/api/v1/usage": "usage",
    }
    for path, names in documented.items():
        expected = sorted(QUERY_PARAMETERS.get(by_name.get(path, ""), ()))
        assert names == expected, path


# --- authentication and a database that is down -------------------------------------------------


def test_bad_or_missing_token_is_401(anon_api):
    assert anon_api.get("/api/v1/memories").status_code == 401
    anon_api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = anon_api.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


@pytest.fixture
def database_down(monkeypatch):
    """Every query fails as it does when PostgreSQL is stopped."""

    def refuse(self, *args, **kwargs):
        raise OperationalError("connection to server on socket failed: No such file or directory")

    monkeypatch.setattr(DatabaseWrapper, "_cursor", refuse)


@pytest.mark.parametrize("method,path,body", EVERY_OPERATION)
@pytest.mark.parametrize("token", ["valid", "invalid", "forced"])
def test_database_down_is_503_with_retry_after_everywhere(
    api, user, method, path, body, token, database_down
):
    if token == "invalid":
        api.credentials(HTTP_AUTHORIZATION="Token 0123456789abcdef0123456789abcdef01234567")
    elif token == "forced":
        api.force_authenticate(user)
    api.raise_request_exception = False
    response = call(api, method, path, body)
    assert response.status_code == 503, (path, response.content)
    assert response["Retry-After"].isdigit()
    if path != "/api/health":
        assert response.json()["error"]["code"] == "database_unavailable"


def test_database_down_on_a_web_page_is_503(client, user, database_down):
    client.raise_request_exception = False
    client.cookies["sessionid"] = "x" * 32
    response = client.get("/")
    assert response.status_code == 503
    assert response["Retry-After"].isdigit()
