"""The OpenAPI schema tells the truth: unique names, each endpoint's own errors, the stream."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def test_schema_generates_without_warnings_and_validates(tmp_path):
    """drf-spectacular warns on two components with one name (the search body was documented
    as the document-ingest body when both were `InputRequest`)."""
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "s.yml"))


def test_search_body_is_its_own_component(schema):
    body = schema["paths"]["/api/v1/memory/search"]["post"]["requestBody"]
    ref = body["content"]["application/json"]["schema"]["$ref"]
    properties = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]
    assert {"query", "top_k", "mode", "filters"} <= set(properties)
    assert "text" not in properties


def _examples(operation, status):
    content = operation["responses"][status]["content"]["application/json"]
    return [example["value"]["error"]["code"] for example in content["examples"].values()]


def test_error_examples_belong_to_their_endpoint(schema):
    paths = schema["paths"]
    assert _examples(paths["/api/v1/memories/{memory_id}"]["get"], "404") == ["memory_not_found"]
    assert _examples(paths["/api/v1/imports/{import_id}"]["get"], "404") == ["import_not_found"]
    assert _examples(paths["/api/v1/chat/heartbeat"]["post"], "404") == ["session_not_found"]
    assert _examples(paths["/api/v1/chat/messages"]["post"], "409") == ["session_not_open"]
    assert "confirmation_required" in _examples(paths["/api/v1/me"]["delete"], "400")
    assert "404" not in paths["/api/v1/memory/stats"]["get"]["responses"]
    for path, operations in paths.items():
        if path.startswith("/v1/"):
            continue  # OpenAI's error shape, checked in tests/gateway_app
        for method, operation in operations.items():
            responses = operation["responses"]
            assert "503" in responses, (method, path)
            if path != "/api/health":
                assert _examples(operation, "401") == ["not_authenticated"]
                assert "invalid_characters" in _examples(operation, "400")
            if "requestBody" in operation:
                assert {"413", "415"} <= set(responses), (method, path)


def test_stream_is_documented_as_server_sent_events(schema):
    ok = schema["paths"]["/api/v1/ai/chat/stream"]["post"]["responses"]["200"]
    stream = ok["content"]["text/event-stream"]
    assert set(stream["x-events"]) == {"context", "message", "done", "error"}
    assert "event: done" in stream["example"]
    for event in stream["x-events"].values():
        assert event["$ref"].rsplit("/", 1)[1] in schema["components"]["schemas"]


def test_ingest_202_and_its_job_are_documented(schema):
    responses = schema["paths"]["/api/v1/knowledge/ingest"]["post"]["responses"]
    assert {"202", "413"} <= set(responses)
    job = schema["paths"]["/api/v1/knowledge/ingest/{job_id}"]
    assert {"get", "delete"} <= set(job) and "404" in job["get"]["responses"]
