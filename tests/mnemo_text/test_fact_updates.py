"""Fact subjects and the rule that says when a new fact replaces an old one."""

from __future__ import annotations

import pytest

from mnemo_text.fact_updates import (
    fact_subject,
    is_update,
    question_relation,
    statement_updates,
    user_statements,
)
from mnemo_text.facts import extract_facts


def test_fact_subject_names_who_the_fact_is_about():
    assert fact_subject("The user lives in Paris.") == "the user"
    assert fact_subject("The user's sister Anna is a nurse.") == "the user's sister anna"
    assert fact_subject("The user's favourite colour is blue.") == "the user's favourite colour"
    assert fact_subject("Alice works at Airbus.", user_name="Alice") == "alice"
    assert fact_subject("") == ""


@pytest.mark.parametrize(
    "old, new",
    [
        ("The user lives in Paris.", "The user moved to Berlin."),
        ("The user lives in Paris.", "The user lives in Berlin."),
        ("The user works at Google.", "The user joined Meta in 2023."),
        ("The user's favourite colour is blue.", "The user's favourite colour is green."),
        ("The user likes coffee.", "The user doesn't like coffee anymore."),
        ("The user has two kids.", "The user has three kids."),
        ("The user is 34 years old.", "The user is 35 years old."),
        ("The user is 34 years old.", "The user is 35."),
        ("The user is vegetarian.", "The user is vegan."),
        ("The user works at Globex.", "The user quit the user's job at Globex last week."),
        ("The user works at Globex.", "The user was laid off from Globex."),
        ("The user works at Globex.", "The user is unemployed now."),
    ],
)
def test_a_new_value_for_the_same_subject_and_relation_is_an_update(old, new):
    assert is_update(old, new)


@pytest.mark.parametrize(
    "old, new",
    [
        ("The user lives in Berlin.", "The user moved to Berlin last month."),
        ("The user lives in Paris.", "The user's sister lives in Rome."),
        ("The user likes coffee.", "The user likes tea."),
        ("The user has a dog.", "The user has a cat."),
        ("The user is a nurse.", "The user is vegetarian."),
        ("The user lives in Paris.", "The user lives in Paris."),
        ("The user lives in Paris.", "The user works at Airbus."),
        ("The user works at Globex.", "The user quit smoking."),
        ("The user lives in Austin.", "The user left the user's job at Globex."),
    ],
)
def test_additions_restatements_and_other_subjects_are_not_updates(old, new):
    assert not is_update(old, new)


@pytest.mark.parametrize(
    "old,new",
    [
        ("I live in Austin, Texas.", "I just moved to Denver, Colorado last week."),
        ("My favorite coffee shop is Blue Bottle.", "My new favorite coffee shop is Ritual."),
        ("I work at Acme.", "I finally joined Globex in March."),
        ("I live in Austin.", "Big news: I moved to Denver last week."),
    ],
)
def test_a_dated_or_hedged_statement_still_updates_the_old_one(old, new):
    before = extract_facts([("user", old)])
    after = extract_facts([("user", new)])

    assert statement_updates(before, after)
    assert not statement_updates(before, before)


@pytest.mark.parametrize(
    "question,relation",
    [
        ("Where do I live now?", "residence"),
        ("Which city do I currently live in?", "residence"),
        ("where am I living?", "residence"),
        ("Where is my home?", "residence"),
        ("Where do I work these days?", "employer"),
        ("What is my job?", "job"),
        ("Where does Caroline live?", ""),
        ("What did I eat for lunch?", ""),
    ],
)
def test_a_first_person_question_names_the_relation_it_asks_about(question, relation):
    assert question_relation(question) == relation


@pytest.mark.parametrize(
    "newer, replaces",
    [
        ("User: We just moved to Denver last week!", True),
        ("User: We're moving to Denver in May.", True),
        ("User: We are based in Denver now.", True),
        ("User: We visited Denver last week.", False),  # a trip, not a move
        ("User: Honestly, we love sushi.", False),
    ],
)
def test_what_the_user_says_of_their_household_counts_as_their_own_statement(newer, replaces):
    """ "We just moved to Denver" replaces the user's "I live in Austin"."""
    older = user_statements("User: I live in Austin.")
    assert statement_updates(older, user_statements(newer)) is replaces
