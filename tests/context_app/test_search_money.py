"""A question about an amount of money ranks the memories that state an amount first."""

from __future__ import annotations

import pytest

from retrieval import trust
from retrieval.config import RANKING
from retrieval.search import memory_search
from tests.context_app.test_search_names import remember

pytestmark = pytest.mark.django_db

QUESTION = "How much did I spend on the pottery workshop?"


def test_the_memory_stating_the_amount_comes_before_one_that_only_talks_about_it(user, monkeypatch):
    chatter = remember(user, "The pottery workshop was so much fun, I loved how much we made.")
    paid = remember(user, "I paid $120 for the pottery workshop.")
    remember(user, "The gym membership renews in March.")

    assert [hit.id for hit in memory_search(user=user, query=QUESTION).items][:2] == [
        paid.id,
        chatter.id,
    ]
    # The words alone put the chatter first ("much" twice): the amount is what lifts the answer.
    flat = RANKING.replace(money_weight=1.0)
    assert [hit.id for hit in memory_search(user=user, query=QUESTION, config=flat).items][:2] == [
        chatter.id,
        paid.id,
    ]


def test_amounts_in_any_currency_and_only_for_questions_about_money():
    assert trust.MONEY_QUERY.search("What did the new tires cost me?")
    assert not trust.MONEY_QUERY.search("Where did I buy the new tires?")
    for text in ("It was $80.", "paid €1,200 upfront", "about 300 dollars", "£15 a month"):
        assert trust._AMOUNT.search(text), text
    assert not trust._AMOUNT.search("We met at 10 and left at 12.")
