"""The memory browser: hybrid search with filters, a memory's source and history, and the
owner's edit and delete (through the memory services)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from imports_app.models import ImportFile, ImportJob
from ingestion_app.models import FactHistory, MemoryItem
from tests.factories import add_message, open_session
from tests.web_app.helpers import store_memory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


@pytest.fixture
def alice(client, user):
    client.force_login(user)
    return user


def result_ids(response) -> list[int]:
    return [row["id"] for row in response.context["rows"]]


def test_browse_shows_only_my_memories_newest_first(client, alice, other_user):
    older = store_memory(alice, "The user likes green tea.", embed=False)
    newer = store_memory(alice, "The user plays the cello.", embed=False)
    store_memory(other_user, "Bob keeps bees in Lyon.", embed=False)

    response = client.get("/memories/")

    assert response.status_code == 200
    assert result_ids(response) == [newer.id, older.id]
    assert "Bob keeps bees" not in response.content.decode()


def test_search_ranks_the_matching_memory_first_with_scores(client, alice, other_user):
    tea = store_memory(alice, "The user's favourite tea is genmaicha from Kyoto.")
    store_memory(alice, "The user's bicycle is a blue road bike.")
    store_memory(other_user, "Bob's favourite tea is genmaicha too.")

    response = client.get("/memories/", {"q": "which tea do I like"})

    rows = response.context["rows"]
    assert rows[0]["id"] == tea.id
    assert rows[0]["score"] > 0 and rows[0]["similarity"] > 0.3
    assert all("Bob" not in str(row["snippet"]) for row in rows)
    html = response.content.decode()
    assert "<mark>tea</mark>" in html
    assert "similarity" in html


def test_filters_by_source_topic_project_and_date(client, alice):
    now = timezone.now()
    fact = store_memory(
        alice, "The user runs marathons.", topics=["running"], project_id="health", embed=False
    )
    chunk = store_memory(
        alice,
        "User: how do I train for a marathon?\nAssistant: slowly.",
        source=MemoryItem.Source.CHUNK,
        topics=["running"],
        embed=False,
    )
    old = store_memory(
        alice,
        "The user ran a marathon in 2019.",
        topics=["running"],
        occurred_at=now - timedelta(days=400),
        embed=False,
    )

    assert result_ids(client.get("/memories/", {"source": "chunk"})) == [chunk.id]
    assert result_ids(client.get("/memories/", {"project": "health"})) == [fact.id]
    recent = client.get(
        "/memories/", {"topic": "running", "since": str((now - timedelta(days=30)).date())}
    )
    assert set(result_ids(recent)) == {fact.id, chunk.id}
    assert result_ids(
        client.get("/memories/", {"until": str((now - timedelta(days=300)).date())})
    ) == [old.id]


def test_search_respects_filters(client, alice):
    store_memory(alice, "The user's sister Anna is a nurse in Porto.", project_id="family")
    store_memory(alice, "The user's colleague Anna is a nurse manager.", project_id="work")

    response = client.get("/memories/", {"q": "Anna nurse", "project": "work"})

    assert [row["snippet"] for row in response.context["rows"]] == [
        "The user&#x27;s colleague <mark>Anna</mark> is a <mark>nurse</mark> manager."
    ]


def test_bad_date_range_is_explained(client, alice):
    response = client.get("/memories/", {"since": "2025-05-02", "until": "2025-05-01"})
    assert "The end date must be on or after the start date." in response.content.decode()
    assert response.context["rows"] == []


def test_htmx_search_returns_only_the_results(client, alice):
    store_memory(alice, "The user's dog is called Pixel.")
    response = client.get(
        "/memories/", {"q": "dog"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results"
    )
    html = response.content.decode()
    assert "Pixel" in html
    assert "<html" not in html


def test_memory_page_shows_chat_source_and_history(client, alice):
    session = open_session(alice, title="Tea talk")
    message = add_message(session, "user", "My favourite tea is genmaicha.")
    fact = store_memory(
        alice, "The user's favourite tea is genmaicha.", session=session, message_ids=[message.id]
    )

    response = client.get(f"/memories/{fact.id}/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "Tea talk" in html
    assert f"/memories/sessions/{session.id}/" in html
    assert f"message #{message.id}" in html
    assert "My favourite tea is genmaicha." in html
    assert "Added" in html  # the ADD history row
    assert f'action="/memories/{fact.id}/edit/"' in html


def test_memory_page_shows_import_file_and_turn_range(client, alice):
    job = ImportJob.objects.create(user=alice, status=ImportJob.Status.DONE)
    import_file = ImportFile.objects.create(
        job=job, user=alice, name="conversations.json", status=ImportFile.Status.IMPORTED
    )
    chunk = store_memory(
        alice,
        "User: what is a good first synth?\nAssistant: a Korg Minilogue.",
        source=MemoryItem.Source.CHUNK,
        metadata={
            "import_job_id": str(job.id),
            "import_file_id": import_file.id,
            "source_platform": "chatgpt",
            "conversation_title": "Synth shopping",
            "turn_range": "3-4",
        },
        embed=False,
    )

    html = client.get(f"/memories/{chunk.id}/").content.decode()

    assert "conversations.json" in html
    assert "turns 3-4" in html
    assert "Synth shopping" in html
    assert f"/memories/imports/{job.id}/" in html


def test_someone_elses_memory_is_not_found(client, alice, other_user):
    theirs = store_memory(other_user, "Bob keeps bees.", embed=False)
    assert client.get(f"/memories/{theirs.id}/").status_code == 404
    assert client.post(f"/memories/{theirs.id}/edit/", {"content": "x"}).status_code == 404
    assert client.post(f"/memories/{theirs.id}/delete/").status_code == 404
    assert MemoryItem.objects.filter(id=theirs.id, content="Bob keeps bees.").exists()


def test_owner_edits_a_memory_and_the_history_keeps_the_old_text(client, alice):
    fact = store_memory(alice, "The user lives in Berlin.")

    response = client.post(
        f"/memories/{fact.id}/edit/",
        {"content": "The user lives in Hamburg.", "topics": "home, city", "reason": "Moved"},
        follow=True,
    )

    fact.refresh_from_db()
    assert fact.content == "The user lives in Hamburg."
    assert fact.topics == ["home", "city"]
    edit = FactHistory.objects.get(memory=fact, event=FactHistory.Event.EDIT)
    assert (edit.previous_content, edit.reason) == ("The user lives in Berlin.", "Moved")
    html = response.content.decode()
    assert f"Memory #{fact.id} updated." in html
    assert "The user lives in Berlin." in html  # shown as "Before" in the history


def test_edit_without_text_is_refused_with_a_message(client, alice):
    fact = store_memory(alice, "The user lives in Berlin.", embed=False)

    response = client.post(f"/memories/{fact.id}/edit/", {"content": "   ", "topics": ""})

    assert response.status_code == 400
    assert "The memory needs some text." in response.content.decode()
    fact.refresh_from_db()
    assert fact.content == "The user lives in Berlin."


def test_too_many_topics_are_refused(client, alice):
    fact = store_memory(alice, "The user lives in Berlin.", embed=False)
    topics = ", ".join(f"t{i}" for i in range(25))
    response = client.post(f"/memories/{fact.id}/edit/", {"content": "x y", "topics": topics})
    assert response.status_code == 400
    assert "At most 20 topics." in response.content.decode()


def test_delete_asks_first_then_removes_for_good(client, alice):
    fact = store_memory(alice, "The user is allergic to peanuts.", embed=False)

    confirm = client.get(f"/memories/{fact.id}/delete/")
    assert f"Delete memory #{fact.id}?" in confirm.content.decode()
    assert MemoryItem.objects.filter(id=fact.id).exists()

    response = client.post(f"/memories/{fact.id}/delete/", follow=True)

    assert not MemoryItem.objects.filter(id=fact.id).exists()
    assert not FactHistory.objects.filter(memory_id=fact.id).exists()
    assert f"Memory #{fact.id} deleted." in response.content.decode()
    assert client.get(f"/memories/{fact.id}/").status_code == 404


def test_search_shows_a_fact_and_the_chunk_it_came_from(client, alice):
    """A prompt needs one of them; the browser shows every kind of memory that matches."""
    session = open_session(alice)
    message = add_message(session, "user", "My favourite tea is genmaicha.")
    chunk = store_memory(
        alice,
        "User: My favourite tea is genmaicha.\nAssistant: Lovely choice.",
        source=MemoryItem.Source.CHUNK,
        session=session,
        message_ids=[message.id],
    )
    fact = store_memory(
        alice, "The user's favourite tea is genmaicha.", session=session, message_ids=[message.id]
    )

    response = client.get("/memories/", {"q": "favourite tea genmaicha"})

    assert {fact.id, chunk.id} <= set(result_ids(response))


def _search_with_why(monkeypatch, why_of):
    """The browser's search, with each hit's `why` set by `why_of(hit)` (the search API's
    contract: a list of {"signal", "rank", "score"}; None stands for a hit without one)."""
    from web_app import selectors as web_selectors

    real_search = web_selectors.memory_search

    def search(**kwargs):
        result = real_search(**kwargs)
        for hit in result.items:
            hit.why = why_of(hit)
        return result

    monkeypatch.setattr(web_selectors, "memory_search", search)


def test_search_results_show_why_each_one_matched(client, alice, monkeypatch):
    tea = store_memory(alice, "The user's favourite tea is genmaicha from Kyoto.")
    _search_with_why(
        monkeypatch,
        lambda hit: [
            {"signal": "keyword", "rank": 2, "score": 0.0312},
            {"signal": "vector", "rank": 1, "score": 0.71},
        ],
    )

    html = client.get("/memories/", {"q": "which tea do I like"}).content.decode()

    why = html.split(f'id="why-{tea.id}"', 1)[1].split("</p>", 1)[0]
    assert "Why it matched:" in why
    assert '<span class="why-signal why-keyword" title="matched the words of the query; ' in why
    assert "rank 2 by keyword; score 0.031" in why
    assert ">keyword #2</span>" in why and ">vector #1</span>" in why
    assert why.index("keyword #2") < why.index("vector #1")


def test_a_result_without_why_or_with_a_malformed_one_shows_no_half_explanation(
    client, alice, monkeypatch
):
    tea = store_memory(alice, "The user's favourite tea is genmaicha from Kyoto.")
    bike = store_memory(alice, "The user's favourite bike is a blue road bike.")
    _search_with_why(
        monkeypatch,
        lambda hit: (
            None
            if hit.id == tea.id
            else [
                {"signal": "telepathy", "rank": 1, "score": 1.0},
                {"signal": "recency", "rank": None, "score": "high"},
                "keyword #1",
            ]
        ),
    )

    html = client.get("/memories/", {"q": "my favourite things"}).content.decode()

    assert f'id="why-{tea.id}"' not in html
    bike_why = html.split(f'id="why-{bike.id}"', 1)[1].split("</p>", 1)[0]
    assert ">recency</span>" in bike_why
    assert "telepathy" not in html and "high" not in bike_why


def test_search_shows_every_chat_turn_whole_not_as_a_gist(client, alice):
    places = ["the beach", "the mountains", "the forest", "a lake", "the desert", "an island"]
    for place in places:
        store_memory(
            alice,
            f"Melanie: Work has been busy and the kids started school again this month. "
            f"We went camping at {place} last weekend with the whole family. "
            f"Everyone loved the evening by the fire and nobody wanted to go home.",
            source=MemoryItem.Source.CHUNK,
        )

    response = client.get("/memories/", {"q": "where did Melanie go camping", "source": "chunk"})

    snippets = [str(row["snippet"]) for row in response.context["rows"]]
    assert len(snippets) == len(places)
    assert all("nobody wanted to go home" in snippet for snippet in snippets)
