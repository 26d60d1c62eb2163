"""Offline summaries: short bullet digests that hold the key facts and never replay a turn."""

from __future__ import annotations

import re

import pytest

from mnemo_text.summaries import fold_summaries, summarize
from tests.mnemo_text.samples import (
    BERLIN_CHAT,
)


def test_summary_is_a_short_bullet_digest_holding_the_key_facts():
    transcript_length = sum(len(text) for _role, text in BERLIN_CHAT)

    summary = summarize(BERLIN_CHAT)

    lines = summary.splitlines()
    assert lines and all(line.startswith("- ") for line in lines)
    assert len(summary) <= transcript_length / 2
    assert "Berlin" in summary and "nurse" in summary
    # The user's statements are retold, not replayed: no first person.
    assert "The user moved to Berlin" in summary
    assert not re.search(r"\bI moved\b", summary)


def test_summary_never_replays_a_turn_or_keeps_filler():
    summary = summarize(BERLIN_CHAT, max_chars=2000)

    for _role, text in BERLIN_CHAT:
        assert text not in summary or len(text) < 20
    for line in summary.splitlines():
        assert not re.fullmatch(r"- (?:User|Assistant): (?:ok thanks|Thanks!?|Sure!?)", line)


@pytest.mark.parametrize("max_chars", [1, 10, 60, 150, 300, 800])
def test_summary_always_fits_the_budget_at_a_line_boundary(max_chars):
    summary = summarize(BERLIN_CHAT * 5, max_chars=max_chars)

    assert len(summary) <= max_chars
    if max_chars >= 150:
        assert all(line.startswith("- ") and len(line) > 10 for line in summary.splitlines())


def test_summary_of_nothing_or_small_talk_is_empty():
    assert summarize([]) == ""
    assert summarize([("user", ""), ("assistant", "   ")]) == ""
    assert summarize([("user", "hi"), ("assistant", "Hello!"), ("user", "thanks")]) == ""
    assert summarize([("user", "I moved to Berlin last month.")], max_chars=0) == ""


def test_summary_uses_the_supplied_embedder_to_drop_repeats():
    turns = [
        ("user", "I adopted a puppy called Rex last week."),
        ("assistant", "Puppies need vaccinations at eight and twelve weeks."),
        ("assistant", "Crate training helps puppies sleep through the night."),
    ]
    calls = []

    def same_vector_for_everything(texts):
        calls.append(list(texts))
        return [[1.0, 0.0, 0.0] for _text in texts]

    summary = summarize(turns, embed=same_vector_for_everything)

    assert calls, "the embedder was not used"
    # Every sentence looks identical to this embedder, so only one line survives.
    assert len(summary.splitlines()) == 1
    assert len(summarize(turns).splitlines()) >= 2


def test_fold_summaries_fits_budget_prefers_newest_and_keeps_older_sessions():
    newest = "- The user moved to Berlin.\n- User asked: How to register an address?"
    middle = "- The user works as a nurse.\n- The user's sister Anna is a nurse."
    oldest = "The user plays the piano. The user likes jazz."

    folded = fold_summaries([newest, middle, oldest], max_chars=120)

    assert len(folded) <= 120
    lines = folded.splitlines()
    assert all(line.startswith("- ") for line in lines)
    assert lines[0] == "- The user moved to Berlin."  # newest first
    assert "- The user plays the piano." in lines  # older sessions still represented


def test_fold_summaries_keeps_one_copy_of_a_repeated_line():
    digest = "- The user moved to Berlin.\n- The user works as a nurse."

    folded = fold_summaries([digest, digest, "- The user moved to Berlin!"], max_chars=500)

    assert folded.count("moved to Berlin") == 1
    assert folded.count("nurse") == 1
    assert fold_summaries([], max_chars=100) == ""
    assert len(fold_summaries(["- " + "word " * 100], max_chars=40)) <= 40


def test_a_fact_said_twice_is_one_line_and_long_chats_stay_within_budget():
    turns = [
        ("user", "I live in Utrecht. How do I get to Schiphol?"),
        ("assistant", "Take the direct train from Utrecht Centraal to Schiphol Airport."),
    ] * 30

    summary = summarize(turns, max_chars=400)

    assert summary.count("The user lives in Utrecht.") == 1
    assert "Schiphol" in summary and len(summary) <= 400


def test_a_question_the_assistant_or_another_speaker_asks_is_no_summary_line():
    turns = [
        ("user", "My brother Tomás just adopted a greyhound called Biscuit."),
        ("assistant", "That's wonderful! How is Biscuit settling in with the family?"),
        ("user", "Biscuit sleeps all day on the sofa in Valencia."),
        ("Melanie", "What made your brother choose a greyhound over a puppy?"),
    ]

    summary = summarize(turns, max_chars=2000)

    assert "brother Tomás just adopted a greyhound" in summary
    assert "?" not in summary


def test_a_title_does_not_end_the_sentence_a_summary_retells():
    turns = [
        ("user", "My cat Luna has been sick all week, the vet Dr. Okafor thinks it's her kidneys.")
    ]

    summary = summarize(turns)

    assert "Dr. Okafor thinks it's her kidneys" in summary
    assert "Dr. -" not in summary and "Dr.\n" not in summary


def test_a_bare_name_answering_a_question_is_no_summary_line():
    turns = [
        ("assistant", "Do you have a venue yet?"),
        ("user", "Yes, Quinta da Aveleda. Ines and Marco want a small ceremony, about 60 guests."),
    ]

    summary = summarize(turns)

    assert "Ines and Marco want a small ceremony" in summary
    assert "noted that Quinta da Aveleda" not in summary


def test_a_chat_line_without_its_i_is_retold_with_the_user_as_subject():
    digest = summarize(
        [
            ("user", "Called Sarah about the lease today. The weather was grey."),
            ("assistant", "Ok."),
        ]
    )

    assert "- The user called Sarah about the lease today." in digest.splitlines()
    assert "noted that called" not in digest and "noted that Called" not in digest


def test_fold_summaries_leaves_out_a_value_a_newer_digest_changed():
    newer = "- The user moved to Denver last week.\n- The user likes climbing."
    older = "- The user lives in Austin.\n- The user likes hiking.\n- The user is 34 years old."

    folded = fold_summaries([newer, older], max_chars=500)

    assert "Austin" not in folded and "Denver" in folded
    assert "hiking" in folded and "climbing" in folded  # more than one thing liked
    assert "34 years old" in folded
    # The same digests the other way round: the newer one is the Austin one.
    assert "Denver" not in fold_summaries([older, newer], max_chars=500)
    # A newer digest not folded here (the recent rollup's) changes the history all the same.
    assert "Austin" not in fold_summaries([older], max_chars=500, newer=[newer])


def test_fold_summaries_keeps_a_line_whose_other_fact_still_stands():
    newer = "- The user just moved to Denver last week."
    older = "- The user lives in Austin and works at Globex.\n- The user lives in Austin."

    folded = fold_summaries([newer, older], max_chars=500)

    assert "works at Globex" in folded  # the job was not changed
    assert "- The user lives in Austin." not in folded.splitlines()


def test_fold_summaries_leaves_out_a_job_the_user_has_since_quit():
    newer = "- The user quit the user's job at Globex last week.\n- The user is unemployed now."
    older = "- The user works at Globex.\n- The user is vegetarian."

    folded = fold_summaries([newer, older], max_chars=500)

    assert "works at Globex" not in folded and "vegetarian" in folded
    assert "works at Globex" not in fold_summaries(
        ["- The user is unemployed now.", older], max_chars=500
    )


def test_the_assistants_congratulations_are_no_summary_line():
    turns = [
        ("user", "Big news: I moved to Denver last week."),
        ("assistant", "Congratulations on the move to Denver! Wash Park has flat running loops."),
        ("user", "I got the job at Initech."),
        ("assistant", "That's so exciting, well done. Their office is by Union Station."),
    ]

    summary = summarize(turns, max_chars=2000)

    assert "The user moved to Denver last week." in summary
    assert "Assistant: Their office is by Union Station." in summary
    assert "Congratulations" not in summary and "exciting" not in summary
