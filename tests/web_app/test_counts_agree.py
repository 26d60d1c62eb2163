"""The memory stats API, the memory browser and the sessions pages count the same memories.

Per-message retrieval items repeat their turn-pair chunk; the browser never lists them, so no
count includes them (they once made the stats say 23 memories and 102 chunks where the
browser said 17 and 90).
"""

from __future__ import annotations

import re

import pytest

from tests.factories import open_session
from tests.web_app.helpers import store_memory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]

MESSAGE_ITEM = {"granularity": "message"}


@pytest.fixture
def memories(user, other_user):
    """Alice: two chats (facts, turn-pair chunks, their per-message items, a summary) and an
    imported document; Bob: memories that must never be counted for Alice."""
    trip = open_session(user, title="Trip planning")
    garden = open_session(user, title="Garden")
    empty = open_session(user, title="Small talk")
    for session, words in ((trip, "Kyoto hotels"), (garden, "tomato seedlings")):
        store_memory(user, f"The user talked about {words}.", session=session, embed=False)
        for turn in range(3):
            store_memory(
                user, f"User: {words} {turn}", source="chunk", session=session, embed=False
            )
            for role in ("User", "Assistant"):
                store_memory(
                    user,
                    f"{role}: {words} {turn}",
                    source="chunk",
                    session=session,
                    metadata=MESSAGE_ITEM,
                    topics=["noise"],
                    embed=False,
                )
    store_memory(
        user, "- The user plans a Kyoto trip.", source="summary", session=trip, embed=False
    )
    store_memory(user, "Handbook: leave policy.", source="document", embed=False)
    bob = open_session(other_user)
    store_memory(other_user, "Bob keeps bees.", session=bob, embed=False)
    store_memory(other_user, "User: bees", source="chunk", session=bob, embed=False)
    return {"trip": trip, "garden": garden, "empty": empty}


def test_stats_browser_and_sessions_pages_count_the_same_memories(client, api, user, memories):
    client.force_login(user)

    stats = api.get("/api/v1/memory/stats").json()
    browser = client.get("/memories/")
    chunks_page = client.get("/memories/", {"source": "chunk"})
    sessions_page = client.get("/memories/sessions/")
    session_counts = {
        str(session.id): session.memory_count
        for session in sessions_page.context["page_obj"].object_list
    }
    detail_counts = {
        name: len(client.get(f"/memories/sessions/{session.id}/").context["memories"])
        for name, session in memories.items()
    }

    # 2 chats x (1 fact + 3 chunks) + 1 summary + 1 document; the 12 message items are not.
    assert stats["total"] == 10
    assert stats["by_source"] == {"fact": 2, "chunk": 6, "summary": 1, "document": 1}
    assert "noise" not in stats["by_topic"]
    # The browser: its list, its header line and its source filter.
    assert browser.context["page_obj"].paginator.count == stats["total"]
    assert browser.context["memory_counts"].by_source == stats["by_source"]
    assert chunks_page.context["page_obj"].paginator.count == stats["by_source"]["chunk"]
    html = browser.content.decode()
    assert re.search(r"You have <strong>10</strong> memories: .*6 chunks", html)
    assert "1 summary<" in html and "summarys" not in html
    # The sessions pages: per chat on the list, and the list on each chat's page.
    assert session_counts == {
        str(memories["trip"].id): 5,
        str(memories["garden"].id): 4,
        str(memories["empty"].id): 0,
    }
    assert detail_counts == {"trip": 5, "garden": 4, "empty": 0}
    assert sum(session_counts.values()) + stats["by_source"]["document"] == stats["total"]
    assert '<span class="memory-count">5 memories</span>' in sessions_page.content.decode()
    assert sessions_page.context["memory_counts"].total == stats["total"]
