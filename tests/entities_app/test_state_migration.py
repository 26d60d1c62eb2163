"""The entity models' move from ingestion_app to entities_app is state only and reversible."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType

from entities_app.models import Entity
from tests.migrations import content_type_labels, migrate_to, table_rows

BEFORE_THE_MOVE = [("entities_app", None), ("ingestion_app", "0017_rows_kept_whole")]


@pytest.mark.django_db(transaction=True)
def test_going_back_and_forth_relabels_the_models_and_touches_no_row(user):
    Entity.objects.create(user=user, name="Ada Lovelace", normalized_name="ada lovelace")
    ContentType.objects.get_for_model(Entity)  # as admin would have created it
    assert content_type_labels("entity") == {"entities_app"}

    migrate_to(BEFORE_THE_MOVE)
    assert content_type_labels("entity") == {"ingestion_app"}
    assert table_rows("entities") == 1  # the table and its row stayed

    migrate_to(None)
    assert content_type_labels("entity") == {"entities_app"}
    assert Entity.objects.filter(user=user, name="Ada Lovelace").count() == 1
