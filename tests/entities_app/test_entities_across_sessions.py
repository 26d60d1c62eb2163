"""A user talks about a sister, her cat and a city over three closed sessions, offline, through
the public API only: what the entity list, an entity page and the next context pack then say."""

from __future__ import annotations

import pytest

from tests.context_app.stream_helpers import stream_turn

pytestmark = pytest.mark.django_db

ENTITIES = "/api/v1/entities"


def session_with(api, capture, *lines: str) -> str:
    """Open a session, log the user's lines and close it (its summary written on close)."""
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    for line in lines:
        body = {"session_id": session_id, "role": "user", "content": line}
        assert api.post("/api/v1/chat/messages", body, format="json").status_code == 201
    with capture(execute=True):
        assert (
            api.post("/api/v1/chat/close", {"session_id": session_id}, format="json").status_code
            == 202
        )
    return session_id


@pytest.fixture
def anna_story(api, fake_embedder, django_capture_on_commit_callbacks):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "My sister Anna lives in Lisbon. She has a cat named Pixel.",
    )
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "Anna Costa called me yesterday",
        "my sister just got a new job at Globex",
    )
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    response, _, _ = stream_turn(
        api, "Pixel misses Lisbon. How is Anna doing?", session_id=session_id
    )
    assert response.status_code == 200
    return session_id


def test_the_sister_keeps_her_description_when_the_session_summaries_name_her(api, anna_story):
    anna = api.get(ENTITIES, {"type": "person"}).json()["results"][0]
    # Met as "Anna", then "Anna Costa": shown under her full name, the first name an alias.
    assert (anna["name"], anna["aliases"]) == ("Anna Costa", ["anna", "anna costa", "my sister"])

    page = api.get(f"{ENTITIES}/{anna['id']}").json()
    # The summary's "The user's sister Anna" once replaced it with "user's sister".
    assert page["description"] == "the user's sister"
    assert page["description_history"] == []
    sessions = {mention["chat_session_id"] for mention in page["mentions"]}
    assert len(sessions) == 3
    pixel = api.get(ENTITIES, {"q": "Pixel"}).json()["results"][0]
    # "She has a cat named Pixel" after "My sister Anna": Anna's cat (it said "cat"), so not
    # what the user's "my cat" would mean.
    assert (pixel["type"], pixel["aliases"], pixel["description"]) == ("pet", [], "Anna's cat")
    assert {related["name"] for related in page["related_entities"]} == {
        "Lisbon",
        "Pixel",
        "Globex",
    }


def test_the_next_context_pack_names_the_entities_and_retells_she_in_lower_case(api, anna_story):
    pack = api.get(f"/api/v1/chat/sessions/{anna_story}/context").json()["pack"]

    known = pack.split("[Known entities]\n", 1)[1].splitlines()
    assert "- [ENTITY: person] Anna Costa (my sister): the user's sister" in known
    assert "- [ENTITY: pet] Pixel: Anna's cat" in known
    assert "- [ENTITY: place] Lisbon" in known
    # The local summary of session 1 once read "The user noted that She has a cat named Pixel."
    assert "The user noted that she has a cat named Pixel." in pack
    assert "that She" not in pack


def test_a_surname_known_only_as_an_alias_finds_the_entity(api, other_api, anna_story):
    for query in ("Costa", "sister", "Anna"):
        found = api.get(ENTITIES, {"q": query}).json()["results"]
        assert [entity["name"] for entity in found] == ["Anna Costa"]
    assert other_api.get(ENTITIES, {"q": "Costa"}).json()["count"] == 0


def test_an_unknown_or_foreign_entity_is_a_404_naming_the_id(api, other_api, anna_story):
    anna_id = api.get(ENTITIES, {"q": "Anna"}).json()["results"][0]["id"]
    for response in (
        other_api.get(f"{ENTITIES}/{anna_id}"),
        other_api.patch(f"{ENTITIES}/{anna_id}", {"description": "x"}, format="json"),
        other_api.delete(f"{ENTITIES}/{anna_id}"),
        api.get(f"{ENTITIES}/{anna_id + 1000}"),
    ):
        assert response.status_code == 404
        assert response.json()["error"] == {
            "code": "entity_not_found",
            "message": "Entity not found.",
            "field": "entity_id",
        }
    assert api.get(f"{ENTITIES}/{anna_id}").json()["description"] == "the user's sister"


def test_a_brothers_dog_is_not_my_dog_and_the_alps_are_a_place(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "My brother Tom moved to Berlin. His dog Rex went hiking with him in the Alps.",
        "I have a cat named Mochi.",
    )

    listed = {e["name"]: e for e in api.get(ENTITIES).json()["results"]}
    assert (listed["Tom"]["type"], listed["Tom"]["aliases"]) == ("person", ["my brother"])
    # Rex once took the alias "my dog", so the user's own "my dog" would have meant him.
    assert (listed["Rex"]["type"], listed["Rex"]["aliases"]) == ("pet", [])
    assert listed["Alps"]["type"] == "place"  # was "organization" after "in the"
    mochi = listed["Mochi"]
    assert (mochi["type"], mochi["aliases"], mochi["description"]) == (
        "pet",
        ["my cat"],
        "the user's cat",
    )


@pytest.mark.parametrize(
    ("first", "later", "name", "alias"),
    [
        ("I work at Acme Corp.", "Lena works at Acme too.", "Acme Corp", "acme"),
        ("I work at Acme.", "Acme Corp hired Lena.", "Acme", "acme corp"),
    ],
)
def test_a_company_with_and_without_its_legal_form_is_one_organization(
    api, fake_embedder, django_capture_on_commit_callbacks, first, later, name, alias
):
    session_with(api, django_capture_on_commit_callbacks, first)
    session_with(api, django_capture_on_commit_callbacks, later)

    listed = api.get(ENTITIES).json()["results"]
    assert sorted((e["name"], e["type"]) for e in listed) == [
        (name, "organization"),
        ("Lena", "person"),  # "hired Lena" once made her an organization
    ]
    acme = next(e for e in listed if e["type"] == "organization")
    assert acme["aliases"] == [alias]
    # The first message, its session's summary and the later message each mention it.
    assert acme["mention_count"] >= 3


@pytest.mark.parametrize(
    ("first", "later", "name", "alias"),
    [
        (
            "I lead Project Atlas at work.",
            "The Atlas launch moved to March.",
            "Project Atlas",
            "atlas",
        ),
        (
            "The Atlas launch moved to March.",
            "I lead Project Atlas at work.",
            "Atlas",
            "project atlas",
        ),
    ],
)
def test_a_project_with_and_without_the_word_project_is_one_project(
    api, fake_embedder, django_capture_on_commit_callbacks, first, later, name, alias
):
    session_with(api, django_capture_on_commit_callbacks, first)
    session_with(api, django_capture_on_commit_callbacks, later)

    projects = [e for e in api.get(ENTITIES).json()["results"] if e["type"] == "project"]
    assert [(e["name"], e["aliases"]) for e in projects] == [(name, [alias])]
    assert projects[0]["mention_count"] >= 3


def test_the_users_old_and_new_home_are_two_places_each_described(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    """ "I live in Lisbon", later "We just moved to Denver": each is described as the user's
    home when said, and "home" is no alias that would fold the new city into the old one."""
    session_with(api, django_capture_on_commit_callbacks, "I live in Lisbon with my partner.")
    session_with(
        api, django_capture_on_commit_callbacks, "We just moved to Denver and I work at Globex."
    )

    listed = {e["name"]: e for e in api.get(ENTITIES).json()["results"]}
    assert {name: (e["type"], e["description"], e["aliases"]) for name, e in listed.items()} == {
        "Lisbon": ("place", "the user's home", []),
        "Denver": ("place", "the user's home", []),
        "Globex": ("organization", "the user's employer", []),
    }


def test_my_best_friend_is_one_person_and_my_friend_another(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "My best friend Priyanka is getting married in Kyoto.",
        "My friend Jake said the concert was great.",
    )
    session_with(api, django_capture_on_commit_callbacks, "my best friend asked me to help")

    listed = {e["name"]: e for e in api.get(ENTITIES, {"type": "person"}).json()["results"]}
    assert {name: (e["aliases"], e["description"]) for name, e in listed.items()} == {
        "Priyanka": (["my best friend"], "the user's best friend"),
        "Jake": (["my friend"], "the user's friend"),
    }
    page = api.get(f"{ENTITIES}/{listed['Priyanka']['id']}").json()
    # The unnamed "my best friend" of the second session is hers, not Jake's.
    assert "my best friend asked me to help" in {m["sentence"] for m in page["mentions"]}
    jake = api.get(f"{ENTITIES}/{listed['Jake']['id']}").json()
    assert "my best friend asked me to help" not in {m["sentence"] for m in jake["mentions"]}
