"""Arguments PostgreSQL cannot store or a calendar cannot hold, sent the way chat apps and MCP
clients send them: a clear error naming the argument on both surfaces, never a crash, and
nothing stored."""

from __future__ import annotations

import asyncio

import pytest
from django.test import Client as DjangoClient
from mcp import Client

from ingestion_app.models import MemoryItem
from sessions_app.models import ChatSession
from tests.gateway_app.conftest import token_for
from tests.gateway_app.test_mcp import http_transport

URL = "/v1/chat/completions"


@pytest.mark.django_db
def test_v1_refuses_nul_and_lone_surrogates_in_openai_shape(user, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {token_for(user)}")
    cases = [
        (
            '{"model": "m", "messages": [{"role": "user", "content": "a\\u0000b"}]}',
            "messages[0].content",
        ),
        (
            '{"model": "m", "messages": [{"role": "system", "content": "be brief"},'
            ' {"role": "user", "content": [{"type": "text", "text": "\\ud800"}]}]}',
            "messages[1].content[0].text",
        ),
    ]
    for body, param in cases:
        response = client.post(URL, data=body, content_type="application/json")
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert error["param"] == param
        assert error["type"] == "invalid_request_error"
        assert "NUL" in error["message"]
    assert not ChatSession.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_mcp_tools_refuse_unstorable_text_and_impossible_dates(live_url, user, fake_embedder):
    calls = [
        ("search_memory", {"query": "where\x00"}, "query"),
        ("search_memory", {"query": "trips", "topics": ["travel\x00"]}, "topics"),
        ("search_memory", {"query": "trips", "project_id": "\x00"}, "project_id"),
        ("search_memory", {"query": "trips", "since": "2026-13-45"}, "since"),
        ("search_memory", {"query": "trips", "as_of": "2026-05-01T10:00:00+99:00"}, "as_of"),
        ("add_memory", {"text": "The user likes \x00 tea."}, "text"),
        ("list_memories", {"query": "\x00"}, "query"),
        ("update_memory", {"memory_id": 1, "text": "x\x00"}, "text"),
        ("get_context", {"query": "\x00"}, "query"),
    ]

    key = token_for(user)

    async def run():
        async with Client(http_transport(live_url, key)) as client:
            return [await client.call_tool(name, arguments) for name, arguments, _ in calls]

    for (name, _, argument), result in zip(calls, asyncio.run(run()), strict=True):
        assert result.is_error, name
        message = result.content[0].text
        assert f"`{argument}`" in message or f"\n{argument}" in message, (name, message)
    assert not MemoryItem.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_mcp_tools_refuse_an_argument_they_do_not_take(live_url, user, fake_embedder):
    calls = [
        ("search_memory", {"query": "trips", "top_k": 3}, "top_k"),  # it is called `limit`
        ("add_memory", {"text": "The user likes tea.", "source": "fact"}, "source"),
        ("delete_memory", {"memory_id": 1, "force": True}, "force"),
    ]
    key = token_for(user)

    async def run():
        async with Client(http_transport(live_url, key)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            return tools, [await client.call_tool(name, arguments) for name, arguments, _ in calls]

    tools, results = asyncio.run(run())
    for (name, _, argument), result in zip(calls, results, strict=True):
        assert result.is_error, name
        message = result.content[0].text
        assert f"{name} arguments\n{argument}\n" in message, message
        assert "not permitted" in message and "https://" not in message
    assert tools["search_memory"].input_schema["additionalProperties"] is False
    assert not MemoryItem.objects.exists()
