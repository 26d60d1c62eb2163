"""The query side of a search: the conversation's speakers a query names, and the text and
vector its vector leg searches with (the name left out, without a second model call)."""

from __future__ import annotations

import re
import time
from functools import lru_cache

import numpy as np
from django.db import connection

from memory_site.providers import ProviderError, get_embedder
from retrieval import scope as search_scope
from retrieval.config import ranking_config
from retrieval.scope import SOURCES, SearchFilters


def _named_speakers(query: str, speakers: list[str]) -> list[str]:
    lowered = query.lower()
    return [
        name for name in speakers if re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", lowered)
    ]


def _without_name(query: str, name: str) -> str:
    """The query with a speaker's name (and its possessive) taken out; "" when nothing else is
    left."""
    rest = re.sub(rf"(?<!\w){re.escape(name)}(?:'s)?(?!\w)", " ", query, flags=re.IGNORECASE)
    rest = " ".join(rest.split())
    return rest if re.search(r"\w", rest) else ""


def _vector_text(query: str, named: list[str]) -> str:
    """What the vector leg embeds: the query, or without its speaker when it names exactly one."""
    if ranking_config().vector_without_name and len(named) == 1:
        return _without_name(query[: ranking_config().max_keyword_query_chars], named[0]) or query
    return query


def search_vector_text(
    *,
    user,
    query: str,
    app_id: str = "default",
    sources: list[str] | tuple[str, ...] = SOURCES,
    filters: SearchFilters | None = None,
) -> str:
    """The text `memory_search` embeds for `query` in this scope (hybrid mode): a caller that
    embeds it ahead (to overlap the model with the database) passes that vector and this text,
    and the search makes no model call. Reads the scope's speakers (cached with its stats)."""
    scope, params = search_scope.scope_sql(
        user_id=user.pk, app_id=app_id, sources=sources, filters=filters or SearchFilters()
    )
    return _vector_text(query, scope_speakers_named(scope, params, query)[1])


def scope_speakers_named(
    scope: str, params: dict, query: str
) -> tuple[search_scope.ScopeStats, list[str]]:
    """(the scope's stats, cached briefly; the scope's speakers the query names)."""
    with connection.cursor() as cursor:
        stats = search_scope.scope_stats(cursor, scope=scope, params=params)
    return stats, _named_speakers(query[: ranking_config().max_keyword_query_chars], stats.speakers)


def query_vector(
    *,
    query: str,
    named: list[str],
    mode: str,
    given: list[float] | None,
    given_text: str | None,
) -> tuple[list[float], float]:
    """The vector the vector leg searches with and the ms spent embedding. It is the vector of
    `_vector_text` (the query, or the query without the one speaker it names): the caller's
    when it embedded that text; when the caller embedded the whole query instead, that vector
    with the name's direction taken out (no model call); else (no vector, or one of another
    text) one embedding of the text."""
    text = _vector_text(query, named) if mode == "hybrid" else query
    given_text = query if given_text is None else given_text
    if given is not None and given_text == text:
        return given, 0.0
    if given is not None and given_text == query and len(named) == 1:
        derived = _without_name_vector(given, named[0])
        if derived is not None:
            return derived, 0.0
    started = time.perf_counter()
    vector = get_embedder().embed([text])[0]
    return vector, (time.perf_counter() - started) * 1000


def embedder_available() -> bool:
    """False when the configured embedder cannot run on this install at all (not a transient
    failure, which still raises ProviderError)."""
    return getattr(get_embedder(), "backend", "") != "unavailable"


@lru_cache(maxsize=512)
def _name_direction(embedder, name: str) -> np.ndarray:
    """A speaker name's own unit embedding, computed once per embedder and name."""
    return np.asarray(embedder.embed([name])[0], dtype=np.float64)


def _without_name_vector(query_embedding: list[float], name: str) -> list[float] | None:
    """The query's unit vector with its component along `name`'s embedding removed: what the
    query asks beyond the name, without a second model call per search. None when the name
    cannot be embedded (the caller keeps the query's own vector)."""
    try:
        direction = _name_direction(get_embedder(), name)
    except ProviderError:
        return None
    vector = np.asarray(query_embedding, dtype=np.float64)
    rest = vector - float(vector @ direction) * direction
    norm = float(np.linalg.norm(rest))
    return (rest / norm).tolist() if norm > 1e-6 else None
