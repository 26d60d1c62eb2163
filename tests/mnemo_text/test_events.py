"""The when/order questions and the reports of something done (mnemo_text.events), checked
against every labelled example: a new phrase or word in data/events.toml lands with the
sentences that need it."""

import json
from pathlib import Path

import pytest

from mnemo_text.events import asks_when_or_order, reports_something_done

LABELLED = [
    json.loads(line)
    for line in (Path(__file__).parent / "events_labelled.jsonl").read_text().splitlines()
    if line.strip()
]
QUESTIONS = [case for case in LABELLED if "question" in case]
STATEMENTS = [case for case in LABELLED if "text" in case]


def test_the_labelled_set_has_both_kinds_of_each():
    assert {case["when_or_order"] for case in QUESTIONS} == {True, False}
    assert {case["done"] for case in STATEMENTS} == {True, False}


@pytest.mark.parametrize("case", QUESTIONS, ids=[case["question"][:50] for case in QUESTIONS])
def test_a_question_about_when_or_in_what_order_is_told_apart(case):
    assert asks_when_or_order(case["question"]) is case["when_or_order"]


@pytest.mark.parametrize("case", STATEMENTS, ids=[case["text"][:50] for case in STATEMENTS])
def test_a_report_of_something_done_is_told_from_requests_plans_and_problems(case):
    assert reports_something_done(case["text"]) is case["done"]
