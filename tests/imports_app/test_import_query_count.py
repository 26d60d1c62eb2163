"""An import's queries grow with its files, not with its conversations or turns: a batch of
conversations is written in a handful of statements (COPY, bulk lookups), never a query per
turn pair."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from tests.factories import chatgpt_conversation

pytestmark = pytest.mark.django_db(transaction=True)


def export_file(tmp_path, name: str, conversations: int):
    path = tmp_path / name
    path.write_text(
        json.dumps(
            [
                chatgpt_conversation(
                    f"Trip {index}",
                    [
                        ("user", f"I am planning trip number {index} to the coast in May."),
                        ("assistant", f"Trip {index} sounds lovely; book the ferry early."),
                        ("user", f"For trip {index} I will bring my bike and a tent."),
                        ("assistant", "Then check the campsite rules for bikes."),
                    ],
                    started=1714000000 + index * 86400,
                    conversation_id=f"conv-{index}",
                )
                for index in range(conversations)
            ]
        )
    )
    return path


def queries_of_import(user, path) -> int:
    job = import_job_create_from_paths(user=user, paths=[path])
    with CaptureQueriesContext(connection) as captured:
        assert import_job_run(job_id=job.id, embed=False).status == "done"
    return len(captured.captured_queries)


def test_an_import_batch_costs_queries_per_file_not_per_conversation(
    user, other_user, tmp_path, settings
):
    settings.MNEMO_ENTITY_TASKS = False
    small = queries_of_import(user, export_file(tmp_path, "small.json", 2))
    large = queries_of_import(other_user, export_file(tmp_path, "large.json", 16))

    # Eight times the conversations (64 turn pairs against 8): a few more statements at most.
    assert large <= small + 10, (small, large)
