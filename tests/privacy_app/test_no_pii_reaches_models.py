"""Nothing unredacted reaches a model: every flow that calls the LLM or the embedder is driven
through the API with text full of personal data, then the loopback server's log is searched.

The fake model is adversarial in a useful way: its JSON answers echo what it was sent, so if
raw text leaked into one prompt it would also flow into stored facts, summaries and headers.
"""

from __future__ import annotations

import io
import json
import re
import warnings

import pytest

from sessions_app.models import ChatSession, Message
from tests.privacy_app.userdata import tables_mentioning

pytestmark = pytest.mark.django_db

PII = {
    "email": "maria.gonzalez@example.com",
    "phone": "+44 20 7946 0958",
    "us_phone": "(415) 555-0132",
    "card": "4111 1111 1111 1111",
    "iban": "DE89 3704 0044 0532 0130 00",
    "ssn": "123-45-6789",
    "ip": "192.168.14.77",
    "secret": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "password": "Hunter2!xq",
}
# The same values with separators dropped: a leak must not hide behind reformatting.
COMPACT = {
    "card": "4111111111111111",
    "iban": "DE89370400440532013000",
    "phone": "442079460958",
    "ssn": "123456789",
}

USER_TURN = (
    f"Hi, I'm Maria. Email me at {PII['email']} or call {PII['phone']}. "
    f"My card is {PII['card']} and my IBAN is {PII['iban']}."
)
ASSISTANT_TURN = f"Thanks Maria, I will write to {PII['email']} and call {PII['us_phone']}."
SECOND_USER_TURN = (
    f"My SSN is {PII['ssn']}, my server is {PII['ip']}, the API key is {PII['secret']} "
    f"and password={PII['password']}. I love hiking in the Alps."
)


def leaks(text: str) -> list[str]:
    found = [name for name, value in PII.items() if value in text]
    digits_only = re.sub(r"[\s\-()+]", "", text)
    found += [f"{name} (compact)" for name, value in COMPACT.items() if value in digits_only]
    return found


def _build(schema: dict, echo: str):
    """A value valid for a JSON schema, echoing the text the model was sent."""
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return _build(options[0], echo)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in schema:
        return {k: _build(v, echo) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_build(schema.get("items", {"type": "string"}), echo)]
    if kind == "integer":
        return 0
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return False
    return echo


def echoing_responder(body: dict) -> dict:
    sent = " ".join(
        str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user"
    )
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    return _build(schema, sent[-400:])


@pytest.fixture
def model(fake_openai_embeddings, settings, tmp_path):
    """LLM and embedder on the loopback server; uploads in a temporary folder."""
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    fake_openai_embeddings.json_responder = echoing_responder
    fake_openai_embeddings.reply_text = "Happy to help with your hiking plans."
    return fake_openai_embeddings


def assert_nothing_leaked(model):
    sent = model.all_text_sent()
    assert sent, "no model was called"
    assert leaks(sent) == [], f"unredacted data reached the model: {leaks(sent)}"


def calls(model, path: str) -> int:
    return len(model.bodies(path))


def open_chat(api) -> str:
    response = api.post("/api/v1/chat/new", {"title": "Trip planning"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["session_id"]


def log_turns(api, session_id: str) -> None:
    for role, content in [
        ("user", USER_TURN),
        ("assistant", ASSISTANT_TURN),
        ("user", SECOND_USER_TURN),
    ]:
        response = api.post(
            "/api/v1/chat/messages",
            {"session_id": session_id, "role": role, "content": content},
            format="json",
        )
        assert response.status_code == 201, response.content


def stream(api, payload: dict) -> str:
    """POST a chat turn and return the streamed reply text (the `message` events joined)."""
    response = api.post("/api/v1/ai/chat/stream", payload, format="json")
    assert response.status_code == 200, getattr(response, "content", b"")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = b"".join(response).decode()
    reply = []
    for block in raw.split("\n\n"):
        lines = block.split("\n")
        if "event: message" in lines:
            data = next(line for line in lines if line.startswith("data:"))
            reply.append(json.loads(data[len("data:") :])["chunk"])
    return "".join(reply)


# --- one flow at a time -----------------------------------------------------------------------


def test_logged_messages_reach_the_indexer_redacted(api, model):
    session_id = open_chat(api)
    log_turns(api, session_id)
    assert calls(model, "/embeddings") >= 1  # the exchange was indexed
    assert_nothing_leaked(model)


def test_chat_stream_sends_only_redacted_history_attachments_and_turn(api, model):
    session_id = open_chat(api)
    log_turns(api, session_id)
    body = stream(
        api,
        {
            "session_id": session_id,
            "context_version": "v2",
            "messages": [
                {"role": "user", "content": USER_TURN},
                {"role": "assistant", "content": ASSISTANT_TURN},
                {"role": "user", "content": SECOND_USER_TURN},
            ],
            "attachments": [
                {"filename": "contacts.txt", "content_type": "text/plain", "text": USER_TURN}
            ],
        },
    )
    assert body == "Happy to help with your hiking plans."
    streamed = [b for b in model.bodies("/chat/completions") if b.get("stream")]
    assert streamed, "the chat turn did not reach the model"
    prompt = json.dumps(streamed[-1]["messages"])
    assert "[EMAIL]" in prompt and "[CARD]" in prompt  # the turn arrived, redacted
    assert_nothing_leaked(model)
    # The stored turn keeps the original, encrypted; the sanitized copy has none of it.
    stored = Message.objects.filter(session_id=session_id, role="user").last()
    assert stored.content == SECOND_USER_TURN
    assert leaks(stored.content_sanitized) == []


def test_commit_to_memory_distils_from_redacted_text(api, model):
    session_id = open_chat(api)
    log_turns(api, session_id)
    before = calls(model, "/chat/completions")
    response = api.post("/api/v1/memory/commit", {"chat_session_id": session_id}, format="json")
    assert response.status_code == 200, response.content
    assert calls(model, "/chat/completions") > before
    assert response.json()["facts_committed"] >= 1
    assert leaks(json.dumps(response.json())) == []
    assert_nothing_leaked(model)


def test_session_close_summarises_redacted_text(api, model, django_capture_on_commit_callbacks):
    session_id = open_chat(api)
    log_turns(api, session_id)
    before = calls(model, "/chat/completions")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/chat/close", {"session_id": session_id}, format="json")
    assert response.status_code == 202
    assert ChatSession.objects.get(id=session_id).status == "closed"
    assert calls(model, "/chat/completions") > before
    assert_nothing_leaked(model)


def test_consolidation_of_a_long_session_sees_redacted_text(
    api, model, settings, django_capture_on_commit_callbacks
):
    settings.MNEMO_CONSOLIDATION_TOKENS = 20
    session_id = open_chat(api)
    before = calls(model, "/chat/completions")
    with django_capture_on_commit_callbacks(execute=True):
        log_turns(api, session_id)
        log_turns(api, session_id)
    assert calls(model, "/chat/completions") > before
    assert_nothing_leaked(model)


def test_edited_memories_are_redacted_before_re_embedding(api, model):
    session_id = open_chat(api)
    log_turns(api, session_id)
    committed = api.post("/api/v1/memory/commit", {"chat_session_id": session_id}, format="json")
    memory_id = committed.json()["facts"][0]["id"]
    before = calls(model, "/embeddings")
    response = api.patch(
        f"/api/v1/memories/{memory_id}",
        {"content": f"Maria's card is {PII['card']}, mail {PII['email']}"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert calls(model, "/embeddings") > before
    assert "[CARD]" in response.json()["content"]
    assert_nothing_leaked(model)


def chatgpt_export() -> bytes:
    def node(node_id, parent, role, text, ts):
        return {
            "id": node_id,
            "parent": parent,
            "children": [],
            "message": {
                "id": node_id,
                "author": {"role": role},
                "create_time": ts,
                "content": {"content_type": "text", "parts": [text]},
            },
        }

    mapping = {
        "u1": node("u1", None, "user", USER_TURN, 1_700_000_000),
        "a1": node("a1", "u1", "assistant", ASSISTANT_TURN, 1_700_000_010),
        "u2": node("u2", "a1", "user", SECOND_USER_TURN, 1_700_000_020),
        "a2": node(
            "a2", "u2", "assistant", f"Stored. I will not share {PII['ip']}.", 1_700_000_030
        ),
    }
    mapping["u1"]["children"] = ["a1"]
    mapping["a1"]["children"] = ["u2"]
    mapping["u2"]["children"] = ["a2"]
    conversation = {
        "id": "conv-1",
        "conversation_id": "conv-1",
        "title": f"Contact {PII['email']}",
        "create_time": 1_700_000_000,
        "update_time": 1_700_000_030,
        "current_node": "a2",
        "mapping": mapping,
    }
    return json.dumps([conversation]).encode()


def test_imported_conversations_are_redacted_before_any_model(
    api, model, django_capture_on_commit_callbacks
):
    upload = io.BytesIO(chatgpt_export())
    upload.name = "conversations.json"
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/imports", {"files": [upload]}, format="multipart")
    assert response.status_code == 202, response.content
    import_id = response.json()["import_id"]
    job = api.get(f"/api/v1/imports/{import_id}").json()
    assert job["status"] == "done", job
    assert calls(model, "/embeddings") >= 1
    assert leaks(json.dumps(job)) == []
    assert_nothing_leaked(model)


def test_ingested_documents_are_redacted_before_any_model(
    api, model, django_capture_on_commit_callbacks
):
    text = "\n\n".join([USER_TURN, ASSISTANT_TURN, SECOND_USER_TURN] * 3)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/api/v1/knowledge/ingest",
            {"text": text, "title": f"Notes for {PII['email']}"},
            format="json",
        )
    assert response.status_code == 202, response.content
    job = api.get(response.json()["status_url"]).json()
    assert job["status"] == "done", job
    assert calls(model, "/embeddings") >= 1
    assert leaks(json.dumps(job)) == []
    assert_nothing_leaked(model)


# --- the whole journey, then the database and the export ---------------------------------------


# What each call answers: a commit reports what it stored (200), a new document is created (201),
# imports and close are queued (202).
EXPECTED_STATUS = {
    "/api/v1/memory/commit": 200,
    "/api/v1/knowledge/ingest": 202,
    "/api/v1/imports": 202,
    "/api/v1/chat/close": 202,
}


def post_ok(api, url: str, body: dict, **kwargs) -> dict:
    response = api.post(url, body, **kwargs)
    assert response.status_code == EXPECTED_STATUS[url], (url, response.content)
    return response.json()


def test_whole_journey_database_and_export(api, user, model, django_capture_on_commit_callbacks):
    session_id = open_chat(api)
    upload = io.BytesIO(chatgpt_export())
    upload.name = "conversations.json"
    with django_capture_on_commit_callbacks(execute=True):
        log_turns(api, session_id)
        stream(
            api, {"session_id": session_id, "messages": [{"role": "user", "content": USER_TURN}]}
        )
        post_ok(api, "/api/v1/memory/commit", {"chat_session_id": session_id}, format="json")
        post_ok(api, "/api/v1/knowledge/ingest", {"text": SECOND_USER_TURN}, format="json")
        post_ok(api, "/api/v1/imports", {"files": [upload]}, format="multipart")
        post_ok(api, "/api/v1/chat/close", {"session_id": session_id}, format="json")
    assert_nothing_leaked(model)

    # The database holds the originals only encrypted: no table has any of them in plain text.
    for name, value in PII.items():
        assert tables_mentioning(value) == {}, f"{name} stored in plain text"

    # The caller's export gives them back (decrypted), next to the redacted copies.
    document = api.get("/api/v1/me/export").json()
    originals = " ".join(m["content"] for m in document["messages"])
    assert PII["email"] in originals and PII["secret"] in originals
    assert leaks(" ".join(m["content_sanitized"] for m in document["messages"])) == []
    assert document["memories"] and document["chunks"] and document["documents"]
    assert document["summaries"] and document["imports"][0]["status"] == "done"
    # Imported turns and documents keep their original text (encrypted at rest) for the export.
    assert PII["ssn"] in " ".join(c["raw_content"] for c in document["chunks"])
    sanitized = [{k: v for k, v in c.items() if k != "raw_content"} for c in document["chunks"]]
    assert leaks(json.dumps(document["memories"] + document["summaries"] + sanitized)) == []
