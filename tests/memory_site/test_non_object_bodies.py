"""Every JSON endpoint answers a body that is valid JSON but not an object with a 4xx.

The schema fuzzer found `true` as the document-ingest body to be a 500 about once in six runs;
this sends each such body to every operation that takes a JSON body, every time.
"""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

from entities_app.models import Entity
from ingestion_app.models import MemoryItem
from profile_app.models import ProfileEntry
from tests.factories import add_message, open_session
from webhooks_app.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

NOT_OBJECTS = ["true", "0", '"text"', '["text"]', "null", "[]"]


def _json_operations() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            content = (operation.get("requestBody") or {}).get("content") or {}
            if "application/json" in content and not path.startswith("/v1/"):
                operations.append((method, path))
    return operations


OPERATIONS = _json_operations()


def test_the_schema_has_json_operations_to_check():
    assert len(OPERATIONS) >= 10


@pytest.fixture
def owned_ids(user, fake_embedder) -> dict[str, str]:
    """Ids the caller owns, so an endpoint that takes one gets as far as reading the body."""
    session = open_session(user)
    add_message(session, "user", "My sister Ines is getting married in Lisbon in June.")
    memory = MemoryItem.objects.create(user=user, source="fact", content="Lives in Paris.")
    entity = Entity.objects.get(user=user, normalized_name="ines")
    entry = ProfileEntry.objects.create(
        user=user, kind="preference", origin="user", text="I like tea."
    )
    endpoint = WebhookEndpoint.objects.create(user=user, url="http://127.0.0.1:9/", secret="x")
    return {
        "{entry_id}": str(entry.id),
        "{endpoint_id}": str(endpoint.id),
        "{session_id}": str(session.id),
        "{memory_id}": str(memory.id),
        "{entity_id}": str(entity.id),
    }


@pytest.mark.parametrize("method,path", OPERATIONS)
def test_a_body_that_is_not_an_object_is_a_4xx(api, owned_ids, method, path):
    api.raise_request_exception = True
    url = path
    for placeholder, value in owned_ids.items():
        url = url.replace(placeholder, value)
    assert "{" not in url, f"no owned id for {path}"
    for body in NOT_OBJECTS:
        response = api.generic(method.upper(), url, body, content_type="application/json")
        assert 400 <= response.status_code < 500, (method, url, body, response.content[:300])
        assert response.status_code != 404, (method, url, body)  # the body was what it judged
        assert set(response.json()["error"]) >= {"code", "message"}
