"""A query naming someone the user's memory never mentions asks about what was never said: its
results lose relevance. Whether a name is mentioned is read from the search's candidates
first, then from the whole scope; another user's memories never count."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection

from ingestion_app.models import MemoryItem
from retrieval import candidates as search_candidates
from retrieval import trust
from retrieval.config import RANKING
from retrieval.scope import scope_sql
from retrieval.search import SOURCES, SearchFilters, memory_search
from tests.factories import memory_write

pytestmark = pytest.mark.django_db


def remember(user, content: str) -> MemoryItem:
    return memory_write(user, content, occurred_at=datetime(2026, 1, 5, tzinfo=UTC))


def scope_of(user):
    return scope_sql(user_id=user.pk, app_id="default", sources=SOURCES, filters=SearchFilters())


def test_names_held_by_a_candidate_in_scope_are_found_by_the_candidate_load(user, other_user):
    priya = remember(user, "Priya brought sourdough to the picnic")
    plain = remember(user, "the picnic was by the lake")
    strangers = remember(other_user, "Zorvak brought sourdough to the picnic")
    scope, params = scope_of(user)
    found: set[str] = set()

    with connection.cursor() as cursor:
        # Another user's item holding "Zorvak" is not in the scope: it never counts.
        candidates = search_candidates.candidates_load(
            cursor,
            [priya.id, plain.id, strangers.id],
            None,
            {},
            probe_covered_pairs=False,
            names=["Priya", "Zorvak", "Lisbon"],
            scope=scope,
            params=params,
            names_found=found,
        )

    assert found == {"Priya"}
    assert set(candidates) == {priya.id, plain.id, strangers.id}


def test_the_scope_is_checked_for_names_no_candidate_holds(user, other_user):
    remember(user, "Priya brought sourdough to the picnic")
    remember(other_user, "Zorvak brought sourdough to the picnic")
    scope, params = scope_of(user)

    with connection.cursor() as cursor:
        missing = trust.names_missing(cursor, scope=scope, params=params, names=["Priya", "Zorvak"])
        none_left = trust.names_missing(
            cursor, scope=scope, params=params, names=["Zorvak"], found={"Zorvak"}
        )

    assert missing == ["Zorvak"]
    assert none_left == []


def test_a_name_never_mentioned_lowers_relevance_a_mentioned_one_does_not(
    user, other_user, fake_embedder
):
    for index in range(12):
        remember(user, f"note {index}: the picnic by the lake had sourdough and cherries")
    remember(user, "Priya said the picnic sourdough was the best she had")
    remember(other_user, "Zorvak said the picnic sourdough was the best he had")

    known = memory_search(user=user, query="what did Priya say about the picnic sourdough?")
    unknown = memory_search(user=user, query="what did Zorvak say about the picnic sourdough?")

    assert known.items and "Priya" in known.items[0].content
    best_known = max(hit.relevance for hit in known.items)
    best_unknown = max((hit.relevance for hit in unknown.items), default=0.0)
    assert best_unknown <= best_known * RANKING.missing_name_factor + 1e-9


def test_a_question_about_a_kind_of_thing_finds_a_memory_of_that_kind(api):
    """ "What activities..." shares no word with "a pottery class": the message's category
    words (keyword context, never shown) bring them together."""
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    for line in (
        "I signed up for a pottery class on Thursdays.",
        "My landlord raised the rent again.",
        "The weather was grey all week.",
    ):
        body = {"session_id": session_id, "role": "user", "content": line}
        assert api.post("/api/v1/chat/messages", body, format="json").status_code == 201

    found = api.post(
        "/api/v1/memory/search",
        {"query": "What activities have I been doing lately?", "mode": "keyword"},
        format="json",
    ).json()["items"]

    assert [item["content"] for item in found][:1] == [
        "User: I signed up for a pottery class on Thursdays."
    ]
    assert all("activit" not in item["content"] for item in found)  # never shown


def test_a_nationality_in_the_question_is_not_a_name_never_mentioned(user, fake_embedder):
    """ "European" describes what is asked about (Spain, England); the memories never say it,
    and the question must still find them."""
    for index in range(12):
        remember(user, f"note {index}: groceries, laundry and the gym on weekdays")
    spain = remember(user, "Maria took a solo trip to Spain last year")

    found = memory_search(user=user, query="What European countries has Maria been to?")

    assert trust.query_names("What European countries has Maria been to?") == ["Maria"]
    assert spain.id in [hit.id for hit in found.items]


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("What did Dr. Patel say about my knee?", ["Patel"]),
        ("What did Tom give me on Aug 15th?", ["Tom"]),
        ("Which Italian restaurants did Tom like?", ["Tom"]),
    ],
)
def test_titles_month_abbreviations_and_nationalities_are_not_names(query, names):
    assert trust.query_names(query) == names
