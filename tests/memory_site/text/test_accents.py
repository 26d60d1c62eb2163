"""The query side folds accents as the stored search vector does, or "Zoe" misses "Zoë"."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import Value

from ingestion_app.models import MemoryItem
from ingestion_app.models.memory_items import AccentsFolded
from memory_site.text.accents import fold_accents

TEXTS = [
    "Zoë moved to São Paulo",
    "Ångström, façade, naïve, Łódź, Straße, Ærø",
    "plain ASCII stays as it is",
    "curly ’quotes’ — and dashes without accents",
    "ĳsselmeer ﬁsh ½ cup at the Café",
    "Dvořák and Müller in Zürich",
]


def _database_fold(text: str) -> str:
    """`text` through the expression the generated search vector applies to each column."""
    compiler = MemoryItem.objects.all().query.get_compiler(connection=connection)
    sql, params = AccentsFolded(Value(text)).as_sql(compiler, connection)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sql}", params)
        return cursor.fetchone()[0]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.django_db
def test_the_database_and_the_query_fold_a_text_alike(text):
    assert fold_accents(text) == _database_fold(text)


def test_folding_drops_accents_only():
    assert fold_accents("Zoë moved to São Paulo") == "Zoe moved to Sao Paulo"
    assert fold_accents("curly ’quotes’") == "curly ’quotes’"
