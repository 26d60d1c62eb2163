"""The Python client against the live schema and a live Mnemo: every operation it calls
exists with the fields it sends and reads, and a scripted session works end to end."""

from __future__ import annotations

import asyncio
import threading
import time
import typing

import httpx
import pytest
from drf_spectacular.generators import SchemaGenerator
from mnemo_client import OPERATIONS, AsyncMnemo, Mnemo, MnemoError, RetryPolicy

from imports_app.models import ImportJob
from imports_app.services.jobs import import_job_run
from tests.gateway_app.conftest import token_for
from tests.ingestion_app.export_builders import chatgpt_linear, write_json

# DRF-spectacular leaves a DELETE's body out of the schema; Mnemo documents it in the
# operation's description instead (DELETE /api/v1/me {"confirm"}).
UNDOCUMENTED_BODIES = {"me.erase"}


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema, node):
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].split("/")[-1]]
    if "allOf" in node:
        merged = {"properties": {}}
        for part in node["allOf"]:
            merged["properties"].update(_resolve(schema, part).get("properties", {}))
        return merged
    return node


def _mismatches(schema, shape, node, where) -> list[str]:
    """Keys of the TypedDict `shape` the schema `node` does not have (recursing into lists of
    TypedDicts)."""
    node = _resolve(schema, node)
    if node.get("type") == "array":
        node = _resolve(schema, node.get("items", {}))
    properties = node.get("properties")
    if properties is None:
        return []  # a free-form object: anything goes
    wrong = []
    for key, annotation in typing.get_type_hints(shape).items():
        if key not in properties:
            wrong.append(f"{where}.{key}")
            continue
        inner = typing.get_args(annotation)
        if typing.get_origin(annotation) is list and inner and typing.is_typeddict(inner[0]):
            wrong += _mismatches(schema, inner[0], properties[key], f"{where}.{key}")
    return wrong


def test_every_client_operation_matches_the_live_schema(schema):
    wrong = []
    for name, operation in OPERATIONS.items():
        spec = schema["paths"].get(operation.path, {}).get(operation.method.lower())
        if spec is None:
            wrong.append(f"{name}: {operation.method} {operation.path} is not in the schema")
            continue
        query = {p["name"] for p in spec.get("parameters", []) if p["in"] == "query"}
        wrong += [f"{name}: query {q}" for q in operation.query if q not in query]
        if operation.body and name not in UNDOCUMENTED_BODIES:
            content = (spec.get("requestBody") or {}).get("content", {})
            body = next(iter(content.values()), {}).get("schema", {})
            fields = _resolve(schema, body).get("properties", {})
            wrong += [f"{name}: body {b}" for b in operation.body if b not in fields]
        responses = spec.get("responses", {})
        if str(operation.status) not in responses:
            wrong.append(f"{name}: no {operation.status} answer")
        elif operation.response is not None:
            answer = responses[str(operation.status)].get("content", {}).get("application/json")
            if answer is None:
                wrong.append(f"{name}: the {operation.status} answer has no JSON")
            else:
                wrong += _mismatches(schema, operation.response, answer["schema"], name)
    assert not wrong, wrong


def test_a_drifted_operation_is_caught(schema, monkeypatch):
    """The check above fails when the client and the server disagree."""
    from mnemo_client import models, operations

    class Renamed(typing.TypedDict, total=False):
        session_identifier: str

    monkeypatch.setitem(
        operations.OPERATIONS,
        "sessions.new",
        operations.Operation(
            "POST", "/api/v1/chat/new", body=("topic",), response=Renamed, status=201
        ),
    )
    with pytest.raises(AssertionError) as failure:
        test_every_client_operation_matches_the_live_schema(schema)
    assert "sessions.new: body topic" in str(failure.value)
    assert "sessions.new.session_identifier" in str(failure.value)
    assert models.Session  # the real shape is untouched


@pytest.mark.django_db(transaction=True)
def test_a_scripted_session_with_the_sync_client(live_url, user, tmp_path, settings):
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    with Mnemo(live_url, token_for(user), timeout=20) as mnemo:
        session = mnemo.sessions.create(title="Trip planning")
        events = list(
            mnemo.chat_stream(
                [
                    {
                        "role": "user",
                        "content": "My sister Ana lives in Porto and I visit her in May.",
                    }
                ],
                session_id=session["session_id"],
            )
        )
        assert [e["event"] for e in events][-1] == "done"
        assert any(e["event"] == "message" for e in events)
        mnemo.sessions.heartbeat(session["session_id"])
        commit = mnemo.commit(session["session_id"])
        assert commit["messages_read"] >= 1

        added = mnemo.memories.add("The user's favourite tea is genmaicha.")
        assert added["status"] == "added"
        memory = mnemo.memories.get(added["memory_id"])
        assert memory["content"] == "The user's favourite tea is genmaicha."
        mnemo.memories.update(added["memory_id"], content="The user's favourite tea is sencha.")
        assert mnemo.memories.history(added["memory_id"])["count"] >= 2
        hits = mnemo.memories.search("Which tea does the user like?", top_k=5)
        assert hits and "sencha" in hits[0]["content"] and hits[0]["why"]
        logged = mnemo.sessions.add_message(session["session_id"], role="user", content="Thanks!")
        assert logged["role"] == "user"
        listed = mnemo.memories.list(source="fact")
        assert added["memory_id"] in [m["id"] for m in listed["results"]]

        export = write_json(
            tmp_path / "conversations.json",
            [chatgpt_linear("Garden", [("I planted tomatoes on the balcony.", "Nice!")])],
        )
        job = mnemo.imports.upload(export)
        assert job["status"] in ("queued", "running", "done")
        # The worker's part (when the test run did not do it in the request), beside the
        # client while it waits.
        worker = threading.Timer(0.5, lambda: import_job_run(job_id=job["import_id"]))
        worker.start()
        done = mnemo.imports.wait(job["import_id"], timeout=60, interval=0.2)
        worker.join()
        assert done["status"] == "done"
        assert done["files"][0]["turn_pairs"] == 1

        mnemo.memories.delete(added["memory_id"])
        with pytest.raises(MnemoError) as missing:
            mnemo.memories.get(added["memory_id"])
        assert missing.value.status == 404 and missing.value.code == "memory_not_found"
        assert missing.value.field == "memory_id"
        mnemo.sessions.close(session["session_id"])
    assert ImportJob.objects.filter(id=job["import_id"], status="done").exists()


@pytest.mark.django_db(transaction=True)
def test_the_async_client_and_mem0_style_calls(live_url, user):
    key = token_for(user)

    async def run():
        async with AsyncMnemo(live_url, key, timeout=20) as mnemo:
            result = await mnemo.add(
                [
                    {"role": "user", "content": "I just adopted a greyhound named Pixel."},
                    {"role": "assistant", "content": "Congratulations on Pixel!"},
                ]
            )
            found = await mnemo.search("What is my dog called?", limit=3)
            profile = await mnemo.profile.get()
            chunks = [e async for e in mnemo.chat_stream([{"role": "user", "content": "Hello"}])]
            with pytest.raises(MnemoError) as bad:
                await mnemo.memories.add("")
            return result, found, profile, chunks, bad.value

    result, found, profile, chunks, bad = asyncio.run(run())
    assert result["facts_committed"] >= 1
    assert any("Pixel" in hit["content"] for hit in found["items"])
    assert set(profile) >= {"instructions", "preferences", "facts"}
    assert chunks[-1]["event"] == "done"
    assert bad.status == 400 and bad.field == "text"


def test_503_is_retried_with_retry_after_and_every_call_has_a_timeout():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(time.monotonic())
        if len(calls) < 3:
            return httpx.Response(
                503,
                headers={"Retry-After": "0"},
                json={"error": {"code": "database_unavailable", "message": "retry shortly"}},
            )
        return httpx.Response(200, json={"app_id": "default", "instructions": []})

    with Mnemo("http://mnemo.test", "key", transport=httpx.MockTransport(handler)) as mnemo:
        assert mnemo.profile.get()["app_id"] == "default"
    assert len(calls) == 3

    def always_down(request):
        return httpx.Response(
            503, json={"error": {"code": "database_unavailable", "message": "down"}}
        )

    retry = RetryPolicy(attempts=2, base=0.01)
    with Mnemo(
        "http://mnemo.test", "key", transport=httpx.MockTransport(always_down), retry=retry
    ) as mnemo:
        with pytest.raises(MnemoError) as failure:
            mnemo.profile.get()
    assert failure.value.status == 503 and failure.value.code == "database_unavailable"

    def slow(request):
        raise httpx.ReadTimeout("timed out", request=request)

    with Mnemo(
        "http://mnemo.test", "key", transport=httpx.MockTransport(slow), retry=retry
    ) as mnemo:
        with pytest.raises(MnemoError) as timed_out:
            mnemo.memories.get(1)
        assert timed_out.value.code == "timeout" and timed_out.value.status == 0
        assert mnemo._http.timeout.read == 30.0
