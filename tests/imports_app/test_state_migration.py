"""The import models' move from ingestion_app to imports_app is state only and reversible."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType

from imports_app.models import ImportJob
from tests.migrations import content_type_labels, migrate_to, table_rows

BEFORE_THE_MOVE = [("imports_app", None), ("ingestion_app", "0015_accent_folded_words")]


@pytest.mark.django_db(transaction=True)
def test_going_back_and_forth_relabels_the_models_and_touches_no_row(user):
    ImportJob.objects.create(user=user)
    ContentType.objects.get_for_model(ImportJob)  # as admin would have created it
    assert content_type_labels("importjob") == {"imports_app"}

    migrate_to(BEFORE_THE_MOVE)
    assert content_type_labels("importjob") == {"ingestion_app"}
    assert table_rows("import_job") == 1  # the table and its row stayed

    migrate_to(None)
    assert content_type_labels("importjob") == {"imports_app"}
    assert ImportJob.objects.filter(user=user).count() == 1
