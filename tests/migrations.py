"""What the tests of a state-only model move (SeparateDatabaseAndState) need: migrate to a
point and back, the app labels a model's content type carries, a table's row count."""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets) -> None:
    """Migrate to `targets` ([(app, migration or None)]); None: to the latest of every app."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())


def content_type_labels(model: str) -> set[str]:
    return set(ContentType.objects.filter(model=model).values_list("app_label", flat=True))


def table_rows(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        return cursor.fetchone()[0]
