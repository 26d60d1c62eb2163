"""Reads on a reply's hot path written as plain SQL: building a query through the ORM cost
about 0.3 ms of CPU more than running it (bench/proxy.py), and these run before every first
token. The rows still come back as model instances."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import models


def raw_first(model: type[models.Model], sql: str, params: Sequence) -> models.Model | None:
    """The first `model` instance `sql` returns (it selects the model's columns), or None."""
    return next(iter(model.objects.raw(sql, params)), None)
