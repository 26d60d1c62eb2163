"""What a client sees over the API: chunks right after each reply, summaries and rollups after close."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


# What each call answers: created, except close (summarization is queued: accepted).
EXPECTED_STATUS = {"chat/new": 201, "chat/messages": 201, "chat/close": 202}


def post(api, path, body):
    response = api.post(f"/api/v1/{path}", body, format="json")
    assert response.status_code == EXPECTED_STATUS[path], response.content
    return response.json()


def test_chunks_summary_tags_and_rollups_over_the_api(api, django_capture_on_commit_callbacks):
    session_id = post(api, "chat/new", {})["session_id"]
    post(
        api,
        "chat/messages",
        {
            "session_id": session_id,
            "role": "user",
            "content": "How often should I water a fiddle leaf fig indoors?",
        },
    )
    post(
        api,
        "chat/messages",
        {
            "session_id": session_id,
            "role": "assistant",
            "content": "Water when the top 5 cm of soil is dry, about weekly.",
        },
    )

    # The exchange is listed and searchable before the next user turn.
    chunks = api.get(
        "/api/v1/memories", {"role": "chunk", "chat_session_id": session_id, "q": "fiddle leaf"}
    ).json()["results"]
    assert len(chunks) == 1
    assert chunks[0]["metadata"]["source_platform"] == "local"
    assert chunks[0]["metadata"]["turn_range"] == "1"

    post(
        api,
        "chat/messages",
        {
            "session_id": session_id,
            "role": "user",
            "content": "My fiddle leaf fig drops leaves near the window.",
        },
    )
    post(
        api,
        "chat/messages",
        {
            "session_id": session_id,
            "role": "assistant",
            "content": "Cold drafts cause leaf drop; move it away from the glass.",
        },
    )
    with django_capture_on_commit_callbacks(execute=True):
        post(api, "chat/close", {"session_id": session_id})

    detail = api.get(f"/api/v1/chat/sessions/{session_id}").json()
    assert detail["status"] == "closed"
    assert "fiddle leaf fig" in detail["summary"]["text"].lower()
    assert any("fiddle" in tag["tag"] for tag in detail["tags"])

    snapshot = api.get("/api/v1/summaries/context").json()
    assert "fiddle leaf fig" in snapshot["recent"].lower()

    summaries = api.get(
        "/api/v1/memories", {"role": "summary", "chat_session_id": session_id}
    ).json()["results"]
    assert [s["metadata"]["kind"] for s in summaries] == ["session_summary"]
