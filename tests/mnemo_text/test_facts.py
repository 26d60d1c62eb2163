"""Offline fact extraction: self-contained third-person facts from the user's own words."""

from __future__ import annotations

import re

import pytest

from mnemo_text.facts import extract_facts
from tests.mnemo_text.samples import (
    BERLIN_CHAT,
)


def test_facts_are_self_contained_third_person_statements():
    facts = extract_facts(BERLIN_CHAT)

    assert "The user moved to Berlin last month." in facts
    assert "The user works as a nurse at Charité." in facts
    assert "The user's sister Anna is a nurse too." in facts
    assert "The user is vegetarian." in facts
    for fact in facts:
        assert not re.search(r"\b(?:I|me|my|mine|I'm|I've)\b", fact), fact
        assert fact.endswith(".")


@pytest.mark.parametrize(
    "statement, expected",
    [
        ("I moved to Berlin last month", ["The user moved to Berlin last month."]),
        ("My sister Anna is a nurse", ["The user's sister Anna is a nurse."]),
        (
            "I live in Paris and my wife works at Airbus.",
            ["The user lives in Paris.", "The user's wife works at Airbus."],
        ),
        ("My wife and I live in Rome.", ["The user's wife and the user live in Rome."]),
        ("I go to the gym every morning.", ["The user goes to the gym every morning."]),
        ("i study computer science", ["The user studies computer science."]),
        ("I don't eat meat.", ["The user doesn't eat meat."]),
        ("Please remember that my birthday is May 5.", ["The user's birthday is May 5."]),
        ("Hi, I'm Sam!", ["The user's name is Sam."]),
        ("When I was ten, I lived in Spain.", ["When the user was ten, the user lived in Spain."]),
        ("I no longer work at Globex.", ["The user no longer works at Globex."]),
        ("I live in Austin and work at Globex.", ["The user lives in Austin and works at Globex."]),
        ("I love my family and work.", ["The user loves the user's family and work."]),
        (
            "Quick update: Marco and I moved to Seattle last week.",
            ["Marco and the user moved to Seattle last week."],
        ),
    ],
)
def test_first_person_statements_become_atomic_facts(statement, expected):
    assert extract_facts([("user", statement)]) == expected


@pytest.mark.parametrize(
    "message",
    [
        "Hello! How are you?",
        "Thanks so much, that was helpful.",
        "How do I renew my passport?",
        "Can you help me write a cover letter?",
        "Write a poem about my cat.",
        "I see, thanks!",
        "I love it!",
        "I'm not sure.",
        "If I moved to Spain, would I need a visa?",
        "My email is [EMAIL].",
        "Tell me about Rome",
    ],
)
def test_questions_greetings_commands_and_placeholders_are_not_facts(message):
    assert extract_facts([("user", message)]) == []


def test_facts_ignore_the_assistant_and_drop_duplicates():
    turns = [
        ("assistant", "You live in Paris and you love jazz."),
        ("user", "I live in Paris."),
        ("user", "i live in paris!"),
        ("system", "I am a system prompt."),
    ]

    assert extract_facts(turns) == ["The user lives in Paris."]


def test_facts_use_the_given_user_name():
    facts = extract_facts([("user", "I live in Oslo and my dog is called Max.")], user_name="Alice")

    assert facts == ["Alice lives in Oslo.", "Alice's dog is called Max."]


def test_a_short_label_before_a_statement_is_not_part_of_the_fact():
    facts = extract_facts(
        [("user", "Quick update: I'm allergic to penicillin, and my dentist is Dr. Ruiz.")]
    )

    assert facts == [
        "The user is allergic to penicillin.",
        "The user's dentist is Dr. Ruiz.",
    ]


def test_a_statement_that_leaves_out_its_i_gets_the_user_as_subject():
    facts = extract_facts(
        [("user", "Had a long call with my boss about the reorg. Alfred called my sister.")]
    )

    assert facts == [
        "The user had a long call with the user's boss about the reorg.",
        "Alfred called the user's sister.",
    ]
