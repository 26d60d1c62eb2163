"""Schemathesis against the live test server: every operation, valid and invalid requests.

Bounded to about half a minute (MNEMO_FUZZ_SECONDS to change it; a few hundred seconds for a
deep run). No response may be a 5xx, carry a status code or content type the schema does not
list, or have a body the schema rejects.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from rest_framework.authtoken.models import Token

from ingestion_app.models import MemoryItem
from sessions_app.models import ChatSession
from tests.factories import add_message, make_user, open_session
from tests.schema_fuzz import CHECKS, fuzz_api

pytestmark = pytest.mark.django_db(transaction=True)

FUZZ_SECONDS = float(os.environ.get("MNEMO_FUZZ_SECONDS", "30"))


@pytest.fixture
def fuzz_user(settings):
    settings.MNEMO_AFTER_MESSAGE_HOOKS = []
    user = make_user("fuzz-user-7c1e")
    session = open_session(user, title="Trip to Kyoto")
    add_message(session, "user", "Which pass should I buy for Kyoto?")
    add_message(session, "assistant", "The JR Pass covers the Shinkansen.")
    MemoryItem.objects.create(user=user, app_id="default", source="fact", content="Lives in Paris.")
    return user


@pytest.mark.timeout(int(FUZZ_SECONDS * 4 + 120))
def test_no_5xx_no_undocumented_status_no_schema_violation(
    live_server, fuzz_user, fake_openai_embeddings
):
    token, _ = Token.objects.get_or_create(user=fuzz_user)
    report = fuzz_api(live_server.url, token=token.key, seconds=FUZZ_SECONDS)
    print(
        f"fuzz: {report.requests} requests over {report.operations} operations in "
        f"{report.seconds:.0f} s; statuses {dict(sorted(report.statuses.items()))}"
    )
    assert report.operations >= 20
    assert report.requests >= report.operations * 2
    assert report.server_errors == 0, report.failures[:10]
    assert report.failures == [], "\n".join(report.failures[:20])


def test_the_chat_stream_matches_its_documented_events(
    live_server, fuzz_user, fake_openai_embeddings
):
    """Each event of a streamed reply is checked against the schema, as the fuzzer checks it
    (a 400-second run found the stream documented as one string, and its events rejected)."""
    token, _ = Token.objects.get_or_create(user=fuzz_user)
    headers = {"Authorization": f"Token {token.key}"}
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json")
    case = schema["/api/v1/ai/chat/stream"]["POST"].Case(
        body={
            "session_id": str(ChatSession.objects.get(user=fuzz_user).id),
            "messages": [{"role": "user", "content": "Which pass covers the Shinkansen?"}],
        },
        media_type="application/json",
    )
    response = case.call(base_url=live_server.url, headers=headers)
    assert response.status_code == 200, response.text[:300]
    assert "event: message" in response.text and "event: done" in response.text
    case.validate_response(response, checks=CHECKS, headers=headers)
