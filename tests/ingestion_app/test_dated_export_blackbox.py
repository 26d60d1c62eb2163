"""A dated ChatGPT export uploaded through POST /api/v1/imports, then searched through
POST /api/v1/memory/search and the MCP `search_memory` tool, as an outside user would (issue
22): the passage of a long reply, the newer value first and the older superseded, `as_of`
between them, the conversation's own date on every item, nothing of it visible to another
user, and bad input refused with the error envelope. The real local embedder, no fake."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from mcp.server.mcpserver.exceptions import ToolError

from gateway_app.mcp.server import _moment
from gateway_app.mcp.server import _search as mcp_search

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/memory/search"
IMPORTS = "/api/v1/imports"
MARCH = datetime(2025, 3, 8, 17, 30, tzinfo=UTC)
MAY = datetime(2025, 5, 21, 9, 5, tzinfo=UTC)
AUGUST = datetime(2025, 8, 14, 20, 10, tzinfo=UTC)
FACT = "the pressure valve on the Acme X200 is set to 2.4 bar at the factory"
BOILER_REPLY = " ".join(
    [
        "Happy to walk you through commissioning the Acme X200 boiler loop before winter.",
        "Start by isolating the unit at the two service valves and letting the system cool for",
        "at least an hour, because the heat exchanger stays hot long after the burner stops.",
        "Next, check the expansion vessel: with the system drained to zero, its air-side",
        "pre-charge should read close to the static head of your building, usually one bar.",
        "Inspect the flue terminal outside for nests, leaves or frost damage, and make sure",
        "nothing has been stacked within the clearance zone printed on the installation label.",
        "Bleed every radiator starting from the lowest floor, and keep a cloth handy, since the",
        "first water out is often dark with magnetite sludge.",
        "If the sludge is heavy, a chemical cleanser followed by an inhibitor dose is worth it.",
        f"Now for the part people most often get wrong: {FACT}, and it should never be",
        "adjusted in the field; if it weeps at normal operating pressure, replace it.",
        "Refill slowly through the filling loop until the gauge reads between 1.0 and 1.5 bar",
        "cold, then close both loop taps and disconnect the braided hose.",
        "Fire the boiler on its highest demand setting and watch the gauge: a rise of up to half",
        "a bar as the water heats is normal, but more points to a flat expansion vessel.",
        "While it runs, listen for kettling, a rumbling or whistling sound that means limescale",
        "on the heat exchanger, which is common in hard-water areas.",
        "Check that the condensate pipe runs downhill all the way to the drain and, if it runs",
        "outside, that it is at least 32 millimetres wide and lagged so it does not freeze.",
        "Finally, set the flow temperature as low as keeps the house comfortable; condensing",
        "boilers are most efficient when the return water comes back below about 55 degrees.",
        "Write down the cold and hot pressure readings with today's date inside the cover, so",
        "next autumn you can see at a glance whether the system is losing water.",
        "If any of these steps feel uncertain, a registered heating engineer can do the annual",
        "service in about an hour, and it usually keeps the manufacturer's warranty valid.",
        "Let me know how the readings look and we can work through anything unusual together.",
    ]
)


def _node(node_id, parent, children, role=None, text=None, said=None) -> dict:
    if role is None:
        return {"id": node_id, "message": None, "parent": parent, "children": children}
    return {
        "id": node_id,
        "parent": parent,
        "children": children,
        "message": {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": said,
            "update_time": None,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "end_turn": True,
            "weight": 1.0,
            "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {},
            "recipient": "all",
        },
    }


def _conversation(conversation_id: str, title: str, day: datetime, turns) -> dict:
    """One conversation of a ChatGPT `conversations.json`: a root, a hidden system message,
    then the turns 45 seconds apart from `day`."""
    start = day.timestamp()
    ids = [f"{conversation_id}-{n}" for n in range(len(turns) + 2)]
    mapping = {ids[0]: _node(ids[0], None, [ids[1]])}
    mapping[ids[1]] = _node(ids[1], ids[0], [ids[2]], "system", "", None)
    mapping[ids[1]]["message"]["metadata"]["is_visually_hidden_from_conversation"] = True
    for index, (role, text) in enumerate(turns):
        node_id = ids[index + 2]
        children = [ids[index + 3]] if index + 3 < len(ids) else []
        mapping[node_id] = _node(node_id, ids[index + 1], children, role, text, start + 45 * index)
    return {
        "title": title,
        "create_time": start,
        "update_time": start + 45 * len(turns),
        "mapping": mapping,
        "current_node": ids[-1],
        "conversation_id": conversation_id,
        "id": conversation_id,
    }


EXPORT = [
    _conversation(
        "c1-austin",
        "Weekend ideas",
        MARCH,
        [
            (
                "user",
                "I live in Austin and I'm looking for something to do outdoors this weekend. "
                "Any ideas for a half-day trip?",
            ),
            (
                "assistant",
                "Since you're in Austin, you could paddle Lady Bird Lake in the morning or hike "
                "the Barton Creek Greenbelt.",
            ),
        ],
    ),
    _conversation(
        "c2-boiler",
        "Boiler maintenance",
        MAY,
        [
            ("user", "Can you give me a checklist for getting my Acme X200 boiler ready?"),
            ("assistant", BOILER_REPLY),
        ],
    ),
    _conversation(
        "c3-denver",
        "Settling in",
        AUGUST,
        [
            (
                "user",
                "I moved to Denver last week! What neighborhoods are good for a morning run?",
            ),
            (
                "assistant",
                "Congratulations on the move! Wash Park and Sloan's Lake have flat loops that "
                "are popular with runners.",
            ),
        ],
    ),
]


def _upload(api, capture, data, name="conversations.json"):
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    with capture(execute=True):  # the queued import runs as the worker would, after commit
        return api.post(IMPORTS, {"files": [SimpleUploadedFile(name, raw)]}, format="multipart")


@pytest.fixture
def imported(api, django_capture_on_commit_callbacks, upload_dir):
    response = _upload(api, django_capture_on_commit_callbacks, EXPORT)
    assert response.status_code == 202
    job = api.get(f"{IMPORTS}/{response.json()['import_id']}").json()
    assert job["status"] == "done"
    assert job["files"][0]["format"] == "chatgpt"
    assert job["files"][0]["conversations"] == 3
    return job


def _search(api, **body) -> list[dict]:
    response = api.post(SEARCH, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["items"]


def test_the_fact_in_the_middle_of_a_long_reply_comes_back_as_its_passage(api, imported):
    items = _search(api, query="What is the pressure valve on my Acme X200 set to?")

    best = items[0]
    assert "2.4 bar" in best["content"]
    assert len(best["content"]) < 700 < len(BOILER_REPLY)
    assert "Happy to walk you through" not in best["content"]
    assert "Let me know how the readings look" not in best["content"]
    assert best["occurred_at"].startswith("2025-05-21")
    assert "Boiler maintenance" in best["provenance"]
    # The whole turn stays one request away: the item the passage was cut from holds it.
    whole = api.get(f"/api/v1/memories/{best['id']}").json()["content"]
    assert best["trimmed"] is None or best["trimmed"]["length"] == len(whole)
    assert FACT in whole
    assert sum("2.4 bar" in item["content"] for item in items) == 1  # one slot, not five


def test_the_newer_value_comes_first_and_the_older_is_superseded_with_both_dates(api, imported):
    items = _search(api, query="Where do I live?")

    assert "Denver" in items[0]["content"] and items[0]["superseded"] is None
    assert items[0]["occurred_at"].startswith("2025-08-14")
    austin = next(item for item in items if "Austin" in item["content"])
    assert austin["occurred_at"].startswith("2025-03-08")
    assert austin["superseded"]["by"] == items[0]["id"]
    assert austin["superseded"]["occurred_at"].startswith("2025-03-08")
    assert austin["superseded"]["by_occurred_at"].startswith("2025-08-14")


@pytest.mark.parametrize("as_of", ["2025-06-15", "2025-06-15T12:00:00Z", "2025-06-15T08:00-04:00"])
def test_as_of_between_the_two_puts_the_older_value_first(api, imported, as_of):
    items = _search(api, query="Where do I live?", as_of=as_of)

    assert "Austin" in items[0]["content"] and items[0]["superseded"] is None
    assert not any(item["superseded"] for item in items)  # nothing replaced Austin yet


@pytest.mark.parametrize(
    "query", ["where am I living?", "Where am I living now?", "Where is my home?"]
)
def test_other_wordings_of_the_question_find_the_move(api, imported, query):
    items = _search(api, query=query)

    assert items, "a question about where I live found nothing"
    assert "Denver" in items[0]["content"]
    austin = next(item for item in items if "Austin" in item["content"])
    assert austin["superseded"]["by"] == items[0]["id"]


def test_the_move_is_found_when_each_statement_opens_a_long_exchange(
    api, django_capture_on_commit_callbacks, upload_dir
):
    advice = BOILER_REPLY.replace("Acme X200", "unit").replace("2.4 bar", "its rated value")
    export = [
        _conversation(
            "a",
            "Garden and boiler",
            MARCH,
            [
                ("user", "I live in Austin. How do I service my boiler at home?"),
                ("assistant", advice),
            ],
        ),
        _conversation(
            "c",
            "New apartment",
            AUGUST,
            [
                (
                    "user",
                    "Big news: I moved to Denver last week, so the boiler in the new apartment "
                    "needs a service too. What should I check first?",
                ),
                ("assistant", advice),
            ],
        ),
    ]
    _upload(api, django_capture_on_commit_callbacks, export)

    now = _search(api, query="Where do I live?")
    before_move = _search(api, query="Where do I live?", as_of="2025-06-15")

    assert "Denver" in now[0]["content"]
    austin = next(item for item in now if "Austin" in item["content"])
    assert austin["superseded"]["by"] == now[0]["id"]
    assert "Austin" in before_move[0]["content"] and before_move[0]["superseded"] is None


def test_every_item_carries_the_conversation_date_not_the_import_date(api, imported):
    listed = api.get("/api/v1/memories", {"source": "chunk"}).json()["results"]

    days = {item["occurred_at"][:10] for item in listed}
    assert days == {"2025-03-08", "2025-05-21", "2025-08-14"}
    found = _search(api, query="Acme X200 boiler checklist, Austin, Denver", top_k=20)
    assert found and all(item["occurred_at"][:4] == "2025" for item in found)


def test_the_mcp_tool_ranks_the_same_way(user, imported):
    now = mcp_search(user, **_mcp_arguments("Where do I live?"))["results"]
    before = mcp_search(user, **_mcp_arguments("Where do I live?", as_of="2025-06-15"))["results"]

    assert "Denver" in now[0]["content"]
    austin = next(item for item in now if "Austin" in item["content"])
    assert austin["superseded"]["by_occurred_at"].startswith("2025-08-14")
    assert "Austin" in before[0]["content"] and before[0]["superseded"] is None


def _mcp_arguments(query: str, **overrides) -> dict:
    arguments = dict(
        query=query,
        limit=10,
        mode="hybrid",
        sources=("fact", "chunk", "summary", "document"),
        project_id=None,
        topics=None,
        since=None,
        until=None,
    )
    return {**arguments, **overrides}


def test_another_user_sees_nothing_of_it(api, other_api, imported):
    mine = _search(api, query="What is the pressure valve on my Acme X200 set to?")[0]

    assert other_api.get(f"{IMPORTS}/{imported['import_id']}").status_code == 404
    assert other_api.get(f"/api/v1/memories/{mine['id']}").status_code == 404
    assert other_api.get(f"/api/v1/memories/{mine['id']}/history").status_code == 404
    assert _search(other_api, query="What is the pressure valve on my Acme X200 set to?") == []
    assert _search(other_api, query="Where do I live?", as_of="2025-06-15") == []
    assert other_api.get("/api/v1/memories").json()["count"] == 0


@pytest.mark.parametrize(
    "as_of",
    [
        123,
        True,
        ["2025-06-15"],
        {"day": 15},
        "",
        "last tuesday",
        "2025-13-45",  # shaped like a date, not one
        "2025-02-30",
        "2025-06-15T25:00:00Z",
        "99999-01-01",
        "2" * 5000,
    ],
)
def test_a_bad_as_of_is_a_400_naming_it(api, as_of):
    response = api.post(SEARCH, {"query": "where do I live?", "as_of": as_of}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "as_of"


@pytest.mark.parametrize("field", ["since", "until"])
def test_an_impossible_filter_date_is_a_400_naming_it(api, field):
    response = api.post(
        SEARCH, {"query": "where do I live?", "filters": {field: "2025-02-30"}}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["field"] == f"filters.{field}"


@pytest.mark.parametrize("value", ["2025-13-45", "2025-02-30", "2025-06-15T25:00:00"])
def test_the_mcp_tool_explains_an_impossible_date(value):
    with pytest.raises(ToolError, match="as_of"):
        _moment(value, "as_of")


def test_a_malformed_export_is_reported_on_its_file_and_stores_nothing(
    api, django_capture_on_commit_callbacks, upload_dir
):
    response = _upload(api, django_capture_on_commit_callbacks, b'[{"title": "cut off", "mapp')

    assert response.status_code == 202
    job = api.get(f"{IMPORTS}/{response.json()['import_id']}").json()
    assert job["files"][0]["status"] in {"skipped", "failed"}
    assert job["files"][0]["error"]
    assert api.get("/api/v1/memories").json()["count"] == 0


def test_out_of_range_timestamps_do_not_break_the_import(
    api, django_capture_on_commit_callbacks, upload_dir
):
    export = json.loads(json.dumps(EXPORT))
    export[0]["create_time"] = 1e300
    export[1]["create_time"] = "yesterday"
    for node in export[2]["mapping"].values():
        if node["message"]:
            node["message"]["create_time"] = -1e12

    response = _upload(api, django_capture_on_commit_callbacks, export)

    job = api.get(f"{IMPORTS}/{response.json()['import_id']}").json()
    assert job["status"] == "done"
    assert job["files"][0]["conversations"] == 3
    items = _search(api, query="What is the pressure valve on my Acme X200 set to?")
    assert items[0]["occurred_at"].startswith("2025-05-21")  # from its messages' own times


def test_the_memory_counts_hold_each_exchange_once_not_its_passages(api, imported):
    listed = api.get("/api/v1/memories", {"page_size": 100}).json()
    stats = api.get("/api/v1/memory/stats").json()

    boiler = [item for item in listed["results"] if "Acme X200" in item["content"]]
    assert len(boiler) == 1 and FACT in boiler[0]["content"]  # the exchange, whole
    assert stats["by_source"]["chunk"] == 3  # three exchanges
    assert stats["total"] == listed["count"]
    with_parts = api.get("/api/v1/memories", {"page_size": 100, "include_message_items": "true"})
    passages = [
        item
        for item in with_parts.json()["results"]
        if item["metadata"].get("granularity") == "passage"
    ]
    assert len(passages) > 2 and any(FACT in item["content"] for item in passages)
