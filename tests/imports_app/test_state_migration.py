"""The import models' move from ingestion_app to imports_app is state only and reversible."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from imports_app.models import ImportJob

BEFORE_THE_MOVE = [("imports_app", None), ("ingestion_app", "0015_accent_folded_words")]


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
    ImportJob.objects.create(user=user)
    ContentType.objects.get_for_model(ImportJob)  # as admin would have created it
    assert _labels("importjob") == {"imports_app"}

    _migrate(BEFORE_THE_MOVE)
    assert _labels("importjob") == {"ingestion_app"}
    assert _rows("import_job") == 1  # the table and its row stayed

    _migrate(None)
    assert _labels("importjob") == {"imports_app"}
    assert ImportJob.objects.filter(user=user).count() == 1
