"""A question about the user, asked of their imported chats: an exchange stored with its reply
answers it on the user's turn, never on a word of the reply alone."""

from __future__ import annotations

import pytest

from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from retrieval.config import RANKING
from retrieval.search import memory_search
from tests.ingestion_app.export_builders import chatgpt_linear, write_json

pytestmark = pytest.mark.django_db

REVIEWS_IN_THE_REPLY = (
    "Makes sense, thank you. Is there a simpler way to load the settings file?",
    "Keep the loader to one function that reads the file once. Code reviews catch bugs early: "
    "pair each reviewer with the author of the change.",
)
PROJECT = [
    ("I'm building a recipe planner with a small web front end.", "A fine first project."),
    ("How should I lay out the shopping list page?", "One column, grouped by aisle."),
    ("Can you explain what a database migration is?", "A versioned change to the schema."),
]
ABOUT_MY_MERGES = "Who reviews my merges?"


def import_exchanges(user, tmp_path, exchanges) -> None:
    path = write_json(tmp_path / "conversations.json", [chatgpt_linear("Planner", exchanges)])
    import_job_run(job_id=import_job_create_from_paths(user=user, paths=[path]).id, embed=True)


def test_a_reply_that_shares_a_word_does_not_answer_a_question_about_the_user(
    user, tmp_path, fake_embedder, upload_dir
):
    import_exchanges(user, tmp_path, [*PROJECT, REVIEWS_IN_THE_REPLY])
    rule_off = RANKING.replace(floor_reads_users_turn_alone=False)

    mine = memory_search(user=user, query=ABOUT_MY_MERGES).items
    read_whole = memory_search(user=user, query=ABOUT_MY_MERGES, config=rule_off).items
    general = memory_search(user=user, query="How do code reviews catch bugs?").items

    assert mine == []
    assert read_whole and "pair each reviewer" in read_whole[0].content
    assert general and "pair each reviewer" in general[0].content


def test_the_users_turn_of_an_imported_exchange_answers_a_question_about_them(
    user, tmp_path, fake_embedder, upload_dir
):
    said = ("Dana reviews my merges before anything lands on main.", "A second pair of eyes.")
    import_exchanges(user, tmp_path, [*PROJECT, REVIEWS_IN_THE_REPLY, said])

    hits = memory_search(user=user, query=ABOUT_MY_MERGES).items

    assert hits and "Dana reviews my merges" in hits[0].content
