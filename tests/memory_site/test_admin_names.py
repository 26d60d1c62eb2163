"""The admin names every model in plain English: "Session summaries", never "Session summarys"."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin


def test_every_admin_model_has_a_correct_plural():
    wrong = [
        f"{model._meta.label}: {model._meta.verbose_name_plural}"
        for model in admin.site._registry
        # "summary" + "s": a consonant before -ys is an English plural gone wrong.
        if re.search(r"[^aeiou]ys$", str(model._meta.verbose_name_plural))
    ]

    assert wrong == []


@pytest.mark.django_db
def test_admin_index_lists_summaries_with_their_plural(admin_client):
    html = admin_client.get("/admin/").content.decode()

    assert "Session summaries" in html
    assert "Topic summaries" in html
    assert "ummarys" not in html
