"""The store's own reads outside search: nearest facts for the commit, topic counts for the
browser, earlier memories holding a word for the entity layer. Each sees only its caller."""

from datetime import timedelta

import pytest
from django.utils import timezone

from ingestion_app.selectors import (
    facts_nearest_many,
    memories_matching_before,
    memory_topics_most_used,
)
from tests.factories import make_user, memory_write
from tests.fake_openai import hashed_embedding

pytestmark = pytest.mark.django_db


def test_each_embedding_gets_its_own_nearest_facts_and_never_another_users():
    owner, stranger = make_user("owner"), make_user("stranger")
    dog = memory_write(owner, "My dog is called Rex.")
    memory_write(owner, "I work as a nurse in Leeds.")
    memory_write(stranger, "My dog is called Rex.")

    by_query = facts_nearest_many(
        user=owner,
        embeddings=[
            hashed_embedding("My dog is called Rex.", 384),
            hashed_embedding("I work as a nurse in Leeds.", 384),
        ],
        limit=1,
    )

    assert [[n.content for n in found] for found in by_query] == [
        ["My dog is called Rex."],
        ["I work as a nurse in Leeds."],
    ]
    assert by_query[0][0].id == dog.id and by_query[0][0].similarity == pytest.approx(1.0)
    assert facts_nearest_many(user=owner, embeddings=[]) == []


def test_similarity_under_the_minimum_is_left_out():
    owner = make_user("owner")
    memory_write(owner, "My dog is called Rex.")

    found = facts_nearest_many(
        user=owner,
        embeddings=[hashed_embedding("Quarterly tax forms are due.", 384)],
        min_similarity=0.99,
    )

    assert found == [[]]


def test_topics_come_most_used_first_and_only_the_callers():
    owner, stranger = make_user("owner"), make_user("stranger")
    memory_write(owner, "Sourdough needs a warm kitchen.", topics=["baking", "bread"])
    memory_write(owner, "Rye takes longer to prove.", topics=["bread"])
    memory_write(stranger, "Tax forms are due in April.", topics=["taxes", "taxes-2"])

    assert memory_topics_most_used(user=owner) == ["bread", "baking"]
    assert memory_topics_most_used(user=owner, limit=1) == ["bread"]


def test_earlier_memories_holding_a_word_newest_first_without_summaries():
    owner, stranger = make_user("owner"), make_user("stranger")
    now = timezone.now()
    first = memory_write(owner, "Rex chewed my slippers.", occurred_at=now - timedelta(days=3))
    second = memory_write(owner, "Rex learned to sit.", occurred_at=now - timedelta(days=2))
    memory_write(
        owner, "Summary: Rex and training.", source="summary", occurred_at=now - timedelta(days=1)
    )
    memory_write(stranger, "Rex is my cat.", occurred_at=now - timedelta(days=2))
    latest = memory_write(owner, "Rex won a prize.", occurred_at=now)

    rows = memories_matching_before(
        user_id=owner.pk, app_id="default", item=latest, terms=["rex"], limit=10
    )

    assert [row[0] for row in rows] == [second.id, first.id]
    assert all(row[4] is False for row in rows)
    assert (
        memories_matching_before(
            user_id=owner.pk, app_id="default", item=latest, terms=["rex"], limit=1
        )[0][0]
        == second.id
    )
