"""Webhooks end to end: a receiver on loopback gets signed events of its own user only,
after the commit; a receiver that is down gets each delivery once when it is back; an
endpoint that fails for a whole retry schedule is disabled with the reason shown."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connection, transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from context_app.services.summaries import session_close_run
from entities_app.models import Entity
from ingestion_app.models import MemoryItem
from ingestion_app.services.commit.add import memory_fact_add
from sessions_app.services.sessions import session_close
from tests.factories import add_message, make_user, open_session
from tests.imports_app.helpers import run_import
from tests.ingestion_app.export_builders import chatgpt_linear, write_json
from webhooks_app.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks_app.services.deliveries import deliveries_due_send
from webhooks_app.services.events import MEMORY_CREATED, event_emit

pytestmark = pytest.mark.django_db


class Receiver:
    """An HTTP receiver on loopback that records what it got and answers `status`."""

    def __init__(self):
        self.received: list[tuple[dict, bytes]] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((dict(self.headers), body))
                self.send_response(receiver.status)
                self.end_headers()
                self.wfile.write(b"ok" if receiver.status < 300 else b"receiver is down")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def events(self, secret: str) -> list[dict]:
        """Every body received, verified against the secret (raises when one is not)."""
        return [Webhook(secret).verify(body, headers) for headers, body in self.received]


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def register(api, url, **body):
    response = api.post("/api/v1/webhooks", {"url": url, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def every_attempt_due():
    """What the retry waits would bring: every pending delivery's time has come."""
    WebhookDelivery.objects.filter(status="pending").update(next_attempt_at=timezone.now())


def test_a_memory_reaches_the_receiver_signed_and_only_its_users(
    api, other_api, user, other_user, receiver, fake_embedder, django_capture_on_commit_callbacks
):
    mine = register(api, receiver.url, events=[MEMORY_CREATED])
    theirs = Receiver()
    try:
        register(other_api, theirs.url)
        assert "secret" not in api.get("/api/v1/webhooks").json()[0]
        assert mine["secret"].startswith("whsec_")

        with django_capture_on_commit_callbacks(execute=False) as queued:
            memory_fact_add(user=user, text="The user's sister Anna lives in Lisbon.")
        assert queued  # the first attempt is queued after the commit, not sent in it
        assert receiver.received == []
        assert deliveries_due_send() == 1

        (event,) = receiver.events(mine["secret"])
        assert event["type"] == "memory.created"
        assert event["data"]["memory"]["content"] == "The user's sister Anna lives in Lisbon."
        assert event["data"]["user_id"] == user.id
        headers = receiver.received[0][0]
        assert headers["webhook-id"].startswith("msg_")
        assert abs(int(headers["webhook-timestamp"]) - timezone.now().timestamp()) < 60
        with pytest.raises(WebhookVerificationError):
            Webhook("whsec_" + "A" * 32).verify(receiver.received[0][1], headers)
        assert theirs.received == []  # bob's receiver never hears of alice's memory
    finally:
        theirs.close()


def test_a_receiver_that_was_down_gets_each_delivery_once(api, user, receiver):
    endpoint = register(api, receiver.url)
    receiver.status = 503
    for index in range(3):
        event_emit(user_id=user.id, event="session.closed", data={"session_id": f"s{index}"})
    assert deliveries_due_send() == 3
    assert WebhookDelivery.objects.filter(status="pending", attempts=1).count() == 3
    later = WebhookDelivery.objects.values_list("next_attempt_at", flat=True)
    assert all(moment > timezone.now() + timedelta(seconds=5) for moment in later)
    assert deliveries_due_send() == 0  # not due yet

    receiver.status = 200
    receiver.received.clear()
    every_attempt_due()
    assert deliveries_due_send() == 3
    every_attempt_due()
    assert deliveries_due_send() == 0
    events = receiver.events(endpoint["secret"])
    assert sorted(e["data"]["session_id"] for e in events) == ["s0", "s1", "s2"]
    ids = [headers["webhook-id"] for headers, _ in receiver.received]
    assert len(set(ids)) == 3

    deliveries = api.get(f"/api/v1/webhooks/{endpoint['id']}/deliveries").json()
    assert {d["status"] for d in deliveries} == {"delivered"}
    log = deliveries[0]["attempt_log"]
    assert [a["status_code"] for a in log] == [503, 200]
    assert log[0]["response_snippet"] == "receiver is down" and log[1]["latency_ms"] >= 0


def test_an_endpoint_failing_the_whole_schedule_is_disabled_with_the_reason(
    api, user, receiver, settings
):
    settings.MNEMO_WEBHOOK_RETRY_SECONDS = [1, 1]
    endpoint = register(api, receiver.url)
    receiver.status = 500
    event_emit(user_id=user.id, event="import.failed", data={"import_id": "x"})
    for _ in range(3):
        every_attempt_due()
        deliveries_due_send()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == 3
    shown = api.get(f"/api/v1/webhooks/{endpoint['id']}").json()
    assert shown["enabled"] is False
    assert "3 failed attempts" in shown["disabled_reason"]
    assert "HTTP 500" in shown["disabled_reason"]
    # A disabled endpoint gets nothing new; turning it on again clears the reason.
    assert event_emit(user_id=user.id, event="import.failed", data={}) == 0
    again = api.patch(f"/api/v1/webhooks/{endpoint['id']}", {"enabled": True}, format="json")
    assert again.json()["enabled"] is True and again.json()["disabled_reason"] == ""


def test_a_refused_connection_is_logged_and_retried(api, user):
    register(api, "http://127.0.0.1:9/nothing-listens-here")
    event_emit(user_id=user.id, event="entity.merged", data={"entity": {"id": 1}})
    deliveries_due_send()
    attempt = WebhookAttempt.objects.get()
    assert attempt.status_code is None and "ConnectError" in attempt.error
    assert WebhookDelivery.objects.get().status == "pending"


def test_an_event_of_a_write_that_rolls_back_is_never_sent(api, user, receiver):
    register(api, receiver.url)
    with pytest.raises(RuntimeError), transaction.atomic():
        event_emit(user_id=user.id, event="memory.deleted", data={"memory": {"id": 1}})
        raise RuntimeError("the write failed")
    assert not WebhookDelivery.objects.exists()


def test_registration_checks_its_input_and_scopes_to_the_caller(api, other_api, receiver):
    for body, field in [
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "http://user:pw@example.com/x"}, "url"),
        ({"url": receiver.url, "events": ["memory.exploded"]}, "events"),
        ({"url": 5}, "url"),
    ]:
        response = api.post("/api/v1/webhooks", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["error"]["field"].startswith(field)
    endpoint = register(api, receiver.url, description="CRM sync")
    for call in (
        lambda: other_api.get(f"/api/v1/webhooks/{endpoint['id']}"),
        lambda: other_api.patch(f"/api/v1/webhooks/{endpoint['id']}", {}, format="json"),
        lambda: other_api.delete(f"/api/v1/webhooks/{endpoint['id']}"),
        lambda: other_api.post(f"/api/v1/webhooks/{endpoint['id']}/secret"),
        lambda: other_api.get(f"/api/v1/webhooks/{endpoint['id']}/deliveries"),
    ):
        assert call().status_code == 404
    assert WebhookEndpoint.objects.filter(id=endpoint["id"]).exists()


def test_the_secret_is_encrypted_at_rest_and_rotation_replaces_it(api, receiver):
    endpoint = register(api, receiver.url)
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM webhooks_app_webhookendpoint")
        (stored,) = cursor.fetchone()
    assert endpoint["secret"] not in stored
    rotated = api.post(f"/api/v1/webhooks/{endpoint['id']}/secret").json()
    assert rotated["secret"] != endpoint["secret"]
    assert WebhookEndpoint.objects.get().secret == rotated["secret"]


def test_private_addresses_are_refused_when_the_setting_says_so(api, settings, receiver):
    settings.MNEMO_WEBHOOK_ALLOW_PRIVATE = False
    response = api.post("/api/v1/webhooks", {"url": receiver.url}, format="json")
    assert response.status_code == 400
    assert "private or loopback" in response.json()["error"]["message"]


def test_every_event_type_is_emitted_by_the_write_that_causes_it(api, user, receiver):
    """commit.completed, memory.updated and memory.deleted come from their services."""
    endpoint = register(api, receiver.url)
    session = open_session(user)
    add_message(session, "user", "I adopted a cat named Miso last week.")
    commit = api.post("/api/v1/memory/commit", {"session_id": str(session.id)}, format="json")
    assert commit.status_code == 200, commit.content
    fact_id = MemoryItem.objects.get(user=user, source="fact").id
    api.patch(
        f"/api/v1/memories/{fact_id}", {"content": "I adopted a cat named Mochi."}, format="json"
    )
    api.delete(f"/api/v1/memories/{fact_id}")
    deliveries_due_send()
    types = [e["type"] for e in receiver.events(endpoint["secret"])]
    for expected in ("memory.created", "commit.completed", "memory.updated", "memory.deleted"):
        assert expected in types, types
    updated = next(e for e in receiver.events(endpoint["secret"]) if e["type"] == "memory.updated")
    assert updated["data"]["previous_content"] and "Mochi" in updated["data"]["memory"]["content"]
    assert json.loads(receiver.received[0][1])["timestamp"]


def test_closing_a_session_importing_and_merging_entities_are_events(
    api, user, receiver, tmp_path, settings
):
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    endpoint = register(
        api, receiver.url, events=["session.closed", "import.completed", "entity.merged"]
    )
    session = open_session(user, title="Garden")
    add_message(session, "user", "My neighbour Ines gave me tomato seedlings.")
    add_message(session, "assistant", "Plant them after the last frost.")
    session_close(user=user, session_id=session.id)
    session_close_run(session_id=session.id)

    export = write_json(
        tmp_path / "conversations.json",
        [chatgpt_linear("Trip", [("I am flying to Porto with Marco.", "Have fun!")])],
    )
    run_import(user, export)

    add_message(open_session(user), "user", "I had coffee with Marco in Porto yesterday.")
    ids = list(
        Entity.objects.filter(user=user, name__in=["Ines", "Marco"]).values_list("id", flat=True)
    )
    assert len(ids) == 2
    merged = api.post(
        "/api/v1/entities/merge", {"target_id": ids[0], "source_ids": [ids[1]]}, format="json"
    )
    assert merged.status_code == 200, merged.content

    deliveries_due_send()
    by_type = {e["type"]: e["data"] for e in receiver.events(endpoint["secret"])}
    assert set(by_type) == {"session.closed", "import.completed", "entity.merged"}
    assert by_type["session.closed"]["session_id"] == str(session.id)
    assert "tomato" in by_type["session.closed"]["summary"].lower()
    assert by_type["import.completed"]["status"] == "done"
    assert by_type["entity.merged"]["merged_ids"] == [ids[1]]


def test_an_endpoint_added_in_admin_gets_a_secret_shown_once(user, client):
    admin_user = make_user("root", staff=True)
    admin_user.is_superuser = True
    admin_user.save()
    client.force_login(admin_user)
    response = client.post(
        "/admin/webhooks_app/webhookendpoint/add/",
        {"user": user.id, "url": "https://crm.example.com/hooks", "enabled": "on", "events": ""},
        follow=True,
    )
    assert response.status_code == 200
    endpoint = WebhookEndpoint.objects.get(user=user)
    assert endpoint.secret.startswith("whsec_")
    shown = [str(m) for m in response.context["messages"]]
    assert any(endpoint.secret in m for m in shown)
    page = client.get(f"/admin/webhooks_app/webhookendpoint/{endpoint.id}/change/")
    assert endpoint.secret not in page.content.decode()
