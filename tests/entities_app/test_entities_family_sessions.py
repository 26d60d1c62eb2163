"""A user talks about a wife, a son, a new puppy, an old friend and the places they go, over
closed sessions, offline, through the public API only (a second black-box pass of the entity
graph): types, aliases, descriptions and the next context pack."""

from __future__ import annotations

import pytest

from tests.context_app.stream_helpers import stream_turn
from tests.entities_app.test_entities_across_sessions import ENTITIES, session_with

pytestmark = pytest.mark.django_db


def listed_by_name(api) -> dict[str, dict]:
    return {entity["name"]: entity for entity in api.get(ENTITIES).json()["results"]}


def test_a_digest_retelling_our_son_keeps_the_users_son(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "Our son Leo turned five on Saturday.",
        "Our kids, Sam and Ella, love the beach.",
    )

    listed = listed_by_name(api)
    # The session's digest says "their son Leo": "son" once replaced "the user's son".
    for name, description in (("Leo", "the user's son"), ("Sam", "the user's kids")):
        page = api.get(f"{ENTITIES}/{listed[name]['id']}").json()
        assert (page["description"], page["description_history"]) == (description, [])


def test_a_puppy_named_in_the_next_sentence_is_the_users_pet(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "We got a puppy last week. Her name is Biscuit.",
        "My sister adopted a kitten. Its name is Mochi.",
    )
    session_with(api, django_capture_on_commit_callbacks, "Biscuit chewed my shoes.")

    listed = listed_by_name(api)
    biscuit = listed["Biscuit"]  # was a person
    assert (biscuit["type"], biscuit["aliases"], biscuit["description"]) == (
        "pet",
        ["my puppy"],
        "the user's puppy",
    )
    assert biscuit["mention_count"] >= 3  # both messages and the first session's summary
    # The sister's kitten: a pet, not the user's.
    assert (listed["Mochi"]["type"], listed["Mochi"]["aliases"]) == ("pet", [])
    assert [e["name"] for e in api.get(ENTITIES, {"q": "my puppy"}).json()["results"]] == [
        "Biscuit"
    ]


def test_a_first_name_and_full_name_in_one_message_are_one_friend(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "Tom invited us to a barbecue. Tom Becker is my oldest friend.",
        "Priya is my wife. Raj Patel, my old roommate, moved to Canada.",
    )
    session_with(api, django_capture_on_commit_callbacks, "Karen was my boss at Globex.")

    listed = listed_by_name(api)
    assert "Tom" not in listed  # was a second person, then the name of the one
    tom = listed["Tom Becker"]  # shown under the full name
    assert (tom["aliases"], tom["description"]) == (
        ["my friend", "tom", "tom becker"],
        "the user's friend",
    )
    # "X is my wife", "X, my old roommate,": the relation after the name, adjectives skipped.
    assert (listed["Priya"]["aliases"], listed["Priya"]["description"]) == (
        ["my wife"],
        "the user's wife",
    )
    assert listed["Raj Patel"]["description"] == "the user's roommate"
    assert (listed["Karen"]["description"], listed["Globex"]["type"]) == (
        "the user's boss",
        "organization",  # was a place after "at"
    )
    raj = api.get(f"{ENTITIES}/{listed['Raj Patel']['id']}").json()
    # Named in one message with Raj; Tom's message named no one else.
    assert {related["name"] for related in raj["related_entities"]} == {"Priya", "Canada"}


def test_a_neighbourhood_and_restaurants_are_places(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "Anna lives in the Mission district. We had dinner at The Golden Fork.",
        "I love the Shoreditch area and the coffee at Bean There Cafe.",
        "I moved from Lisbon to Berlin, and I volunteer with the Red Cross.",
    )

    types = {name: entity["type"] for name, entity in listed_by_name(api).items()}
    # Mission, Golden Fork and Shoreditch were people, the Red Cross too.
    assert types == {
        "Anna": "person",
        "Mission": "place",
        "Golden Fork": "place",
        "Shoreditch": "place",
        "Bean There Cafe": "place",
        "Lisbon": "place",
        "Berlin": "place",
        "Red Cross": "organization",
    }


def test_the_next_pack_and_search_show_what_else_the_user_calls_an_entity(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "My sister Ines lives in Porto.",
        "We got a puppy last week. Her name is Biscuit.",
    )
    session_with(api, django_capture_on_commit_callbacks, "Ines Costa called me about Biscuit.")
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    response, _, _ = stream_turn(api, "What should I get Ines and Biscuit?", session_id=session_id)
    assert response.status_code == 200

    pack = api.get(f"/api/v1/chat/sessions/{session_id}/context").json()["pack"]
    known = pack.split("[Known entities]\n", 1)[1].splitlines()
    # The lines once showed no alias: "my sister" and "Ines Costa" found her, the pack did not say.
    assert "- [ENTITY: person] Ines Costa (my sister): the user's sister" in known
    assert "- [ENTITY: pet] Biscuit (my puppy): the user's puppy" in known

    body = {"query": "my sister", "include_entities": True}
    results = api.post("/api/v1/memory/search", body, format="json").json()["items"]
    ines = next(
        item for item in results if item["type"] == "entity" and item["name"] == "Ines Costa"
    )
    assert ines["aliases"] == ["ines", "ines costa", "my sister"]
    assert ines["content"] == "[ENTITY: person] Ines Costa (my sister): the user's sister"


def test_someone_the_user_works_with_stays_a_person(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(api, django_capture_on_commit_callbacks, "I work with Nadia on the launch.")
    session_with(api, django_capture_on_commit_callbacks, "I volunteer with Habitat for Humanity.")

    types = {name: entity["type"] for name, entity in listed_by_name(api).items()}
    # "work with Nadia" made her an organization.
    assert types == {"Nadia": "person", "Habitat for Humanity": "organization"}


def test_is_a_beagle_makes_a_pet_and_promoted_at_an_employer(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "Waffles comes everywhere with us. Waffles is a beagle.",
        "My partner Sasha got promoted at Initrode today!",
    )

    listed = listed_by_name(api)
    # Waffles was a person, Initrode a place.
    assert (listed["Waffles"]["type"], listed["Waffles"]["description"]) == ("pet", "beagle")
    assert listed["Initrode"]["type"] == "organization"
    assert listed["Sasha"]["description"] == "the user's partner"


def test_a_session_summary_relates_only_names_said_together(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "My cat Luna is sick again; Dr. Huber is treating her.",
        "Before Vienna we lived in Milan for years.",
    )

    listed = listed_by_name(api)
    related = {
        name: {r["name"] for r in api.get(f"{ENTITIES}/{entity['id']}").json()["related_entities"]}
        for name, entity in listed.items()
    }
    # The digest holds both lines: it once related Luna to Milan and Vienna.
    assert related["Luna"] == {"Dr. Huber"}
    assert related["Milan"] == {"Vienna"}


def test_a_sentence_opening_adverb_or_meal_is_not_a_person(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "Luckily Priya came over. Dinner with Hiroshi was lovely.",
        "Apparently, Emily is moving. Tbh work is fine. Honestly, Monday works. Thanks!",
    )

    # "Luckily Priya" was one person, "Dinner" and "Apparently" others.
    assert sorted(listed_by_name(api)) == ["Emily", "Hiroshi", "Priya"]


def test_a_company_named_before_the_user_says_they_work_there_becomes_an_organization(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    """A short capitalised name is a person by default ("Globex is hiring"); a later cue
    ("I work at Globex") outweighs that default, in a later session or the same message, but
    never a person the user described ("my friend Wendy") or named as a speaker."""
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "Globex is hiring again. My friend Wendy told me.",
        "Initech keeps growing. I got a job at Initech in May.",
    )
    session_with(
        api, django_capture_on_commit_callbacks, "I work at Globex now. Wendy works at Globex too."
    )

    listed = listed_by_name(api)
    assert listed["Globex"]["type"] == "organization"  # was a person
    assert listed["Initech"]["type"] == "organization"
    assert (listed["Wendy"]["type"], listed["Wendy"]["description"]) == (
        "person",
        "the user's friend",
    )
    assert [e["name"] for e in api.get(ENTITIES, {"type": "person"}).json()["results"]] == ["Wendy"]


def test_a_son_named_will_is_found_and_every_will_is_not_a_mention_of_him(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "My son Will starts school in September.",
        "New York is expensive, so we stay in Brooklyn.",
    )
    will = listed_by_name(api)["Will"]
    assert (will["type"], will["description"]) == ("person", "the user's son")
    before = will["mention_count"]
    session_with(
        api,
        django_capture_on_commit_callbacks,
        "I will bake a cake tomorrow.",
        "we will fly out in june, it will be fun",
    )

    listed = listed_by_name(api)
    assert listed["Will"]["mention_count"] == before
    assert listed["New York"]["type"] == "place"
    assert "York" not in listed


def test_the_assistants_my_brother_is_not_the_users_and_a_new_sister_is_not_the_old_one(
    api, fake_embedder, django_capture_on_commit_callbacks
):
    session_with(api, django_capture_on_commit_callbacks, "My sister Ines lives in Porto.")
    session_id = api.post("/api/v1/chat/new", {}, format="json").json()["session_id"]
    for role, content in (
        ("user", "Any tips for Rome?"),
        ("assistant", "My brother Tom loves Rome. My dog Rex would too."),
        ("user", "My sister Maria lives in Rome."),
    ):
        body = {"session_id": session_id, "role": role, "content": content}
        assert api.post("/api/v1/chat/messages", body, format="json").status_code == 201
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/api/v1/chat/close", {"session_id": session_id}, format="json")

    listed = listed_by_name(api)
    # The assistant's brother and dog are named in the user's memory, not as the user's.
    assert (listed["Tom"]["aliases"], listed["Tom"]["description"]) == ([], "")
    assert listed["Rex"]["description"] == ""
    assert listed["Maria"]["description"] == "the user's sister"
    ines = api.get(f"{ENTITIES}/{listed['Ines']['id']}").json()
    assert all("Maria" not in mention["sentence"] for mention in ines["mentions"])
