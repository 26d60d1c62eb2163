"""What a user sees after importing a dated export, with the real local embedder (no fake):
the passage of a long reply that holds the fact, the newer of two values first with the older
marked superseded, and `as_of` between them turning that around."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from memory_site.tokens import count_tokens
from tests.factories import chatgpt_conversation

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/memory/search"
GARDEN_REPLY = " ".join(
    [
        "Great question! Planning a garden in a dry climate takes some thought.",
        "First, think about the soil: sandy soil drains quickly, so add compost every spring.",
        "Second, choose plants that tolerate drought, such as lavender, sage and rosemary.",
        "Mulch helps the soil keep its moisture through the hot afternoons.",
        "Drip irrigation on a timer uses far less water than sprinklers do.",
        "Tomatoes need deep watering twice a week rather than a little every day.",
        "One detail people often miss: the pumpkin variety Red Kuri needs exactly 95 days to",
        "ripen, so sow it before mid May.",
        "Companion planting with marigolds keeps some pests away.",
        "Raised beds warm up earlier in spring and are easier on the back.",
        "Collect rainwater in barrels from the roof gutters whenever you can.",
        "Shade cloth protects young seedlings from the strongest midday sun.",
        "Finally, keep a garden journal so next year you know what worked and what did not.",
        "Good luck with your garden, and enjoy the harvest!",
    ]
)


def conversation(title: str, day: datetime, turns: list[tuple[str, str]]) -> dict:
    """One ChatGPT-export conversation said on `day`."""
    return chatgpt_conversation(
        title, turns, started=int(day.timestamp()), conversation_id=title.replace(" ", "-")
    )


@pytest.fixture
def dated_import(user, tmp_path):
    export = [
        conversation(
            "Moving plans",
            datetime(2026, 1, 10, tzinfo=UTC),
            [
                (
                    "user",
                    "I live in Austin, Texas, and I work as a nurse at a children's hospital.",
                ),
                ("assistant", "Thanks for sharing! Austin is a lovely city."),
            ],
        ),
        conversation(
            "Garden",
            datetime(2026, 2, 12, tzinfo=UTC),
            [
                ("user", "How should I plan my vegetable garden this year?"),
                ("assistant", GARDEN_REPLY),
            ],
        ),
        conversation(
            "New city",
            datetime(2026, 4, 20, tzinfo=UTC),
            [
                ("user", "I just moved to Denver, Colorado last week, the mountains are amazing."),
                ("assistant", "Congratulations on the move to Denver! Enjoy the mountains."),
            ],
        ),
    ]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export))
    job = import_job_create_from_paths(user=user, paths=[path])
    assert import_job_run(job_id=job.id).status == "done"


def test_a_fact_inside_a_long_reply_comes_back_as_its_passage(api, dated_import):
    body = api.post(
        SEARCH, {"query": "how many days does the Red Kuri pumpkin need?"}, format="json"
    ).json()

    best = body["items"][0]
    assert "95 days" in best["content"]
    assert len(best["content"]) < len(GARDEN_REPLY) * 0.7  # a passage, not the whole reply
    assert "enjoy the harvest" not in best["content"]
    assert best["occurred_at"].startswith("2026-02-12")  # the conversation's date, not today


def test_the_tokens_used_by_imported_results_are_exactly_those_of_their_text(api, dated_import):
    body = api.post(SEARCH, {"query": "Red Kuri pumpkin days to ripen"}, format="json").json()

    assert body["items"]
    exact = sum(count_tokens(item["content"]) for item in body["items"])
    assert body["total_tokens_used"] == exact > 0


def test_the_newer_value_first_and_as_of_between_puts_the_older_first(api, dated_import):
    items = api.post(SEARCH, {"query": "where do I live?"}, format="json").json()["items"]

    assert "Denver" in items[0]["content"] and items[0]["superseded"] is None
    austin = next(item for item in items if "Austin" in item["content"])
    assert austin["superseded"]["by"] == items[0]["id"]
    assert austin["superseded"]["occurred_at"].startswith("2026-01-10")
    assert austin["superseded"]["by_occurred_at"].startswith("2026-04-20")

    before_move = api.post(
        SEARCH, {"query": "where do I live?", "as_of": "2026-03-01"}, format="json"
    ).json()["items"]
    assert "Austin" in before_move[0]["content"] and before_move[0]["superseded"] is None
