"""POST /api/v1/memory/search and GET /api/v1/memory/stats as an API client sees them.
Embeddings come from the loopback server (hashed bag of words), so similarities are exact."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone

from ingestion_app.models import MemoryItem
from tests.factories import memory_write

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/memory/search"
STATS = "/api/v1/memory/stats"


def remember(user, content: str, **fields) -> MemoryItem:
    return memory_write(
        user, content, occurred_at=fields.pop("occurred_at", timezone.now()), **fields
    )


def test_search_returns_ranked_items_with_scores(api, user, fake_embedder):
    best = remember(user, "the user keeps bees on the roof", metadata={"hive": 2})
    remember(user, "the user keeps a diary")
    remember(user, "unrelated note about taxes")

    response = api.post(SEARCH, {"query": "the user keeps bees on the roof"}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"items", "total_tokens_used", "query_embedding_ms", "search_ms"}
    first = body["items"][0]
    assert set(first) == {
        "type",
        "id",
        "source",
        "bucket",
        "content",
        "score",
        "similarity",
        "keyword_rank",
        "created_at",
        "occurred_at",
        "metadata",
        "relevance",
        "why",
        "provenance",
        "superseded",
        "trimmed",
    }
    assert first["id"] == best.id and first["metadata"]["hive"] == 2
    assert first["metadata"]["provenance"] == "Committed fact"
    assert first["similarity"] == pytest.approx(1.0) and first["keyword_rank"] > 0
    scores = [item["score"] for item in body["items"]]
    assert scores == sorted(scores, reverse=True)
    assert body["total_tokens_used"] == sum(
        MemoryItem.objects.get(id=item["id"]).token_count for item in body["items"]
    )


def test_other_users_memories_never_come_back(api, other_api, user, other_user, fake_embedder):
    remember(other_user, "the launch code is 7741")
    mine = remember(user, "my bike lock code is 1234")

    for mode in ("hybrid", "semantic", "keyword"):
        response = api.post(
            SEARCH,
            {"query": "the launch code is 7741", "mode": mode, "min_similarity": -1},
            format="json",
        )
        assert response.status_code == 200
        assert [item["id"] for item in response.json()["items"]] in ([], [mine.id])
    theirs = other_api.post(SEARCH, {"query": "bike lock code"}, format="json").json()
    assert mine.id not in [item["id"] for item in theirs["items"]]


def test_top_k_max_tokens_sources_and_filters(api, user, fake_embedder):
    for index in range(6):
        remember(user, f"garden plan {index} tomatoes basil", project_id="home")
    summary = remember(user, "garden plan summary", source="summary", project_id="home")
    remember(user, "garden plan at the office", project_id="work")

    top = api.post(SEARCH, {"query": "garden plan", "top_k": 2}, format="json").json()
    assert len(top["items"]) == 2
    budget = api.post(SEARCH, {"query": "garden plan", "max_tokens": 10}, format="json").json()
    assert 0 < budget["total_tokens_used"] <= 10
    summaries = api.post(
        SEARCH, {"query": "garden plan", "sources": ["summary"]}, format="json"
    ).json()
    assert [item["id"] for item in summaries["items"]] == [summary.id]
    work = api.post(
        SEARCH,
        {"query": "garden plan", "filters": {"project_id": "work"}, "top_k": 50},
        format="json",
    ).json()
    assert [item["content"] for item in work["items"]] == ["garden plan at the office"]


def test_date_filters_accept_dates_and_datetimes(api, user, fake_embedder):
    march = remember(
        user, "dentist appointment", occurred_at=datetime(2024, 3, 5, 15, 0, tzinfo=UTC)
    )
    remember(user, "dentist invoice", occurred_at=datetime(2024, 4, 2, tzinfo=UTC))

    by_date = api.post(
        SEARCH,
        {"query": "dentist", "filters": {"since": "2024-03-01", "until": "2024-03-05"}},
        format="json",
    ).json()
    by_datetime = api.post(
        SEARCH,
        {"query": "dentist", "filters": {"until": "2024-03-05T14:00:00Z"}},
        format="json",
    ).json()

    assert [item["id"] for item in by_date["items"]] == [march.id]
    assert by_datetime["items"] == []


def test_min_similarity_threshold(api, user, fake_embedder):
    close = remember(user, "red apples and green pears")
    remember(user, "a completely different subject")

    response = api.post(
        SEARCH, {"query": "red apples and green pears", "min_similarity": 0.9}, format="json"
    )

    assert [item["id"] for item in response.json()["items"]] == [close.id]


@pytest.mark.parametrize(
    "payload, field",
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": 42}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 51}, "top_k"),
        ({"query": "x", "top_k": "5"}, "top_k"),
        ({"query": "x", "top_k": True}, "top_k"),
        ({"query": "x", "max_tokens": 0}, "max_tokens"),
        ({"query": "x", "min_similarity": 1.5}, "min_similarity"),
        ({"query": "x", "min_similarity": "high"}, "min_similarity"),
        ({"query": "x", "mode": "fuzzy"}, "mode"),
        ({"query": "x", "sources": "fact"}, "sources"),
        ({"query": "x", "sources": []}, "sources"),
        ({"query": "x", "sources": ["fact", "email"]}, "sources[1]"),
        ({"query": "x", "filters": []}, "filters"),
        ({"query": "x", "filters": {"since": "yesterday"}}, "filters.since"),
        ({"query": "x", "filters": {"until": 20240101}}, "filters.until"),
        (
            {"query": "x", "filters": {"since": "2024-05-01", "until": "2024-04-01"}},
            "filters.until",
        ),
        ({"query": "x", "filters": {"chat_session_id": "not-a-uuid"}}, "filters.chat_session_id"),
        ({"query": "x", "filters": {"topics": "cooking"}}, "filters.topics"),
        ({"query": "x", "filters": {"projectid": "p"}}, "filters.projectid"),
        ({"query": "x", "limit": 5}, "limit"),
    ],
)
def test_invalid_requests_are_400_naming_the_field(api, payload, field):
    response = api.post(SEARCH, payload, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_input"
    assert error["field"] == field


def test_malformed_json_and_anonymous_callers(api, anon_api):
    malformed = api.post(SEARCH, data="{not json", content_type="application/json")
    assert malformed.status_code == 400
    assert malformed.json()["error"]["code"] == "malformed_json"
    assert anon_api.post(SEARCH, {"query": "x"}, format="json").status_code == 401
    assert anon_api.get(STATS).status_code == 401


def test_embedding_failure_is_502_and_keyword_mode_still_works(api, user, fake_embedder):
    remember(user, "the spare key is under the mat")
    fake_embedder.fail_count = 5

    failed = api.post(SEARCH, {"query": "spare key"}, format="json")
    keyword = api.post(SEARCH, {"query": "spare key", "mode": "keyword"}, format="json")

    assert failed.status_code == 502
    assert failed.json()["error"]["code"] == "embedding_failed"
    assert keyword.status_code == 200
    assert [item["content"] for item in keyword.json()["items"]] == [
        "the spare key is under the mat"
    ]


def test_stats_totals_by_source_project_and_topic(api, user, other_user):
    remember(user, "a", project_id="p1", topics=["bees"])
    remember(user, "b", source="chunk", project_id="p1", topics=["bees", "honey"])
    remember(user, "c", source="document", app_id="docs")
    remember(other_user, "d", project_id="p1", topics=["bees"])

    everything = api.get(STATS).json()
    docs_app = api.get(STATS, {"app_id": "docs"}).json()

    assert everything == {
        "total": 3,
        "by_source": {"fact": 1, "chunk": 1, "summary": 0, "document": 1},
        "by_project": {"p1": 2, "": 1},
        "by_topic": {"bees": 2, "honey": 1},
        "total_entities": 0,
        "bucket_distribution": {"OTHER": 3},
    }
    assert docs_app["total"] == 1 and docs_app["by_source"]["document"] == 1


def test_a_search_runs_a_bounded_number_of_queries(
    api, user, fake_embedder, django_assert_max_num_queries
):
    """Measured 13 queries for 10 results (auth, scope, the keyword, entity and vector
    candidates, the top items' text for fact updates, the rows); the bound sits a little above
    so a query per result would fail it."""
    for index in range(15):
        remember(user, f"the user keeps bees, note {index} about the hive")

    with django_assert_max_num_queries(15):
        response = api.post(SEARCH, {"query": "bees in the hive"}, format="json")

    assert response.status_code == 200
    assert len(response.json()["items"]) == 10
