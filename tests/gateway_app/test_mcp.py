"""The MCP server through the `mcp` client library: Streamable HTTP at /mcp (Bearer token)
and stdio (`manage.py mcp --user`), every tool called, and another user's data unreachable."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from urllib.parse import quote

import httpx
import httpx2
import pytest
from django.db import connection
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from ingestion_app.models import FactHistory, MemoryItem
from tests.factories import add_message, open_session
from tests.gateway_app.conftest import token_for

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "search_memory",
    "add_memory",
    "list_memories",
    "update_memory",
    "delete_memory",
    "get_context",
    "get_profile",
    "list_sessions",
}
ROOT = Path(__file__).resolve().parents[2]


def http_transport(live_url: str, key: str):
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=20)
    return streamable_http_client(f"{live_url}/mcp", http_client=client)


async def call(client: Client, name: str, **arguments):
    result = await client.call_tool(name, arguments)
    return result


def structured(result) -> dict:
    """The tool's JSON answer, as the model reads it."""
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def exercise_every_tool(client: Client) -> dict:
    """Add, find, edit, list and delete through the tools; returns what was seen."""
    seen = {}
    seen["tools"] = {tool.name for tool in (await client.list_tools()).tools}
    added = structured(
        await call(client, "add_memory", text="The user's sister Anna lives in Lisbon.")
    )
    seen["added"] = added
    seen["again"] = structured(
        await call(client, "add_memory", text="The user's sister Anna lives in Lisbon.")
    )
    memory_id = added["memory_id"]
    seen["search"] = structured(await call(client, "search_memory", query="Where does Anna live?"))
    seen["search_as_of"] = structured(
        await call(client, "search_memory", query="Where does Anna live?", as_of="2099-01-01")
    )
    seen["listed"] = structured(await call(client, "list_memories", source="fact"))
    seen["updated"] = structured(
        await call(
            client,
            "update_memory",
            memory_id=memory_id,
            text="The user's sister Anna lives in Porto.",
        )
    )
    seen["context"] = structured(await call(client, "get_context", query="visiting my sister Anna"))
    seen["sessions"] = structured(await call(client, "list_sessions"))
    seen["profile"] = structured(await call(client, "get_profile"))
    seen["invalid"] = await call(client, "search_memory", query="")
    # JSON true is not an id: it must not delete (or edit) the memory whose id is 1.
    seen["boolean_id"] = await call(client, "delete_memory", memory_id=True)
    seen["boolean_limit"] = await call(client, "list_memories", limit=True)
    seen["deleted"] = structured(await call(client, "delete_memory", memory_id=memory_id))
    seen["gone"] = await call(client, "delete_memory", memory_id=memory_id)
    return seen


def assert_every_tool_worked(seen: dict) -> None:
    assert seen["tools"] == TOOLS
    assert seen["added"]["status"] == "added"
    assert seen["again"]["status"] == "duplicate"
    assert seen["again"]["memory_id"] == seen["added"]["memory_id"]
    assert seen["search"]["results"][0]["id"] == seen["added"]["memory_id"]
    first = seen["search"]["results"][0]
    assert first["relevance"] > 0 and first["why"] and first["superseded"] is None
    assert {entry["signal"] for entry in first["why"]} <= {"keyword", "vector", "entity", "recency"}
    assert seen["search_as_of"]["results"][0]["id"] == seen["added"]["memory_id"]
    assert [m["content"] for m in seen["listed"]["memories"]] == [
        "The user's sister Anna lives in Lisbon."
    ]
    assert seen["updated"]["memory"]["content"] == "The user's sister Anna lives in Porto."
    assert "Porto" in seen["context"]["pack"]
    assert seen["context"]["chars"] <= seen["context"]["cap_chars"]
    assert seen["sessions"]["sessions"][0]["title"] == "Trip planning"
    assert [e["text"] for e in seen["profile"]["preferences"]] == [
        "I prefer window seats on long flights."
    ]
    assert "I prefer window seats" in seen["context"]["pack"].split("\n\n")[1]
    assert seen["invalid"].is_error and "query" in seen["invalid"].content[0].text
    assert seen["boolean_id"].is_error and "memory_id" in seen["boolean_id"].content[0].text
    assert seen["boolean_limit"].is_error and "limit" in seen["boolean_limit"].content[0].text
    assert seen["deleted"] == {"status": "deleted", "memory_id": seen["added"]["memory_id"]}
    assert seen["gone"].is_error and "not found" in seen["gone"].content[0].text


def test_http_transport_serves_every_tool_in_the_users_scope(
    live_url, user, other_user, fake_embedder
):
    session = open_session(user, title="Trip planning")
    add_message(session, "user", "I am planning a trip to Portugal.")
    add_message(session, "user", "I prefer window seats on long flights.")
    alice, bob = token_for(user), token_for(other_user)

    async def run():
        async with Client(http_transport(live_url, alice)) as client:
            seen = await exercise_every_tool(client)
            structured(await call(client, "add_memory", text="The user lives in Paris."))
            kept = structured(await call(client, "add_memory", text="The user lives in Berlin."))
        async with Client(http_transport(live_url, bob)) as client:
            probes = {
                "search": structured(
                    await call(client, "search_memory", query="where does the user live")
                ),
                "listed": structured(await call(client, "list_memories")),
                "sessions": structured(await call(client, "list_sessions")),
                "update": await call(
                    client, "update_memory", memory_id=kept["memory_id"], text="x y"
                ),
                "delete": await call(client, "delete_memory", memory_id=kept["memory_id"]),
                "context": structured(
                    await call(client, "get_context", query="where does the user live")
                ),
                "profile": structured(await call(client, "get_profile")),
            }
        return seen, kept, probes

    seen, kept, probes = asyncio.run(run())
    assert_every_tool_worked(seen)
    # A fact that changes a stored one replaces it, keeping the old value in its history.
    assert kept["status"] == "updated"
    assert kept["previous_content"] == "The user lives in Paris."
    assert FactHistory.objects.filter(memory_id=kept["memory_id"], event="UPDATE").exists()
    # Bob sees nothing of Alice's and cannot touch it.
    assert probes["search"]["results"] == []
    assert probes["listed"]["memories"] == []
    assert probes["sessions"]["sessions"] == []
    assert probes["update"].is_error and "not found" in probes["update"].content[0].text
    assert probes["delete"].is_error and "not found" in probes["delete"].content[0].text
    assert "Berlin" not in probes["context"]["pack"]
    assert probes["profile"]["preferences"] == []
    assert MemoryItem.objects.get(id=kept["memory_id"]).content == "The user lives in Berlin."


def test_http_transport_refuses_missing_and_bad_keys(live_url, db):
    assert httpx.post(f"{live_url}/mcp", json={}).status_code == 401
    bad = httpx.post(f"{live_url}/mcp", json={}, headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and bad.headers["www-authenticate"].startswith("Bearer")
    foreign_host = httpx.post(
        f"{live_url}/mcp", json={}, headers={"Host": "evil.example", "Authorization": "Bearer x"}
    )
    assert foreign_host.status_code == 400


def test_stdio_transport_serves_every_tool(user, fake_embedder, settings):
    session = open_session(user, title="Trip planning")
    add_message(session, "user", "I am planning a trip to Portugal.")
    add_message(session, "user", "I prefer window seats on long flights.")
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{quote(db['HOST'], safe='')}/{db['NAME']}",
        "EMBEDDING_PROVIDER": "openai",
        "EMBEDDING_MODEL": settings.EMBEDDING_MODEL,
        "EMBEDDING_DIMENSIONS": str(settings.EMBEDDING_DIMENSIONS),
        "OPENAI_BASE_URL": settings.OPENAI_BASE_URL,
        "OPENAI_API_KEY": "test-key",
        "LLM_PROVIDER": "local",
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--user", user.username],
        env=env,
        cwd=str(ROOT),
    )

    async def run():
        async with Client(params) as client:
            return await exercise_every_tool(client)

    assert_every_tool_worked(asyncio.run(run()))
