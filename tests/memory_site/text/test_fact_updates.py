"""Fact subjects and the rule that says when a new fact replaces an old one."""

from __future__ import annotations

import pytest

from memory_site.text.fact_updates import fact_subject, is_update


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
        ("The user is vegetarian.", "The user is vegan."),
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
    ],
)
def test_additions_restatements_and_other_subjects_are_not_updates(old, new):
    assert not is_update(old, new)
