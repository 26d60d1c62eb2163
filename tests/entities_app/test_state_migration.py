"""The entity models' move from ingestion_app to entities_app is state only and reversible."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from entities_app.models import Entity

BEFORE_THE_MOVE = [("entities_app", None), ("ingestion_app", "0017_rows_kept_whole")]


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())


def _labels(model: str) -> set[str]:
    return set(ContentType.objects.filter(model=model).values_list("app_label", flat=True))


def _rows(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_going_back_and_forth_relabels_the_models_and_touches_no_row(user):
    Entity.objects.create(user=user, name="Ada Lovelace", normalized_name="ada lovelace")
    ContentType.objects.get_for_model(Entity)  # as admin would have created it
    assert _labels("entity") == {"entities_app"}

    _migrate(BEFORE_THE_MOVE)
    assert _labels("entity") == {"ingestion_app"}
    assert _rows("entities") == 1  # the table and its row stayed

    _migrate(None)
    assert _labels("entity") == {"entities_app"}
    assert Entity.objects.filter(user=user, name="Ada Lovelace").count() == 1
