"""Fixtures for the gateway: Mnemo served by uvicorn on loopback, the fake upstream, tokens."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token


@pytest.fixture
def upstream(fake_embedder, generous_budget):
    """The fake OpenAI-compatible upstream (also the embedder); summaries stay local."""
    return fake_embedder


@pytest.fixture
def generous_budget(db):
    """A context-build budget no busy test machine misses (the default is 300 ms)."""
    from context_app.models import ContextSettings

    ContextSettings.objects.update_or_create(pk=1, defaults={"latency_budget_ms": 5000})


def token_for(user) -> str:
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
