"""Reads of the context settings staff edit: the pack's tunables, opt-outs, topic overrides.

Summaries, rollups and topics are read through `context_app.summary_selectors`.
"""

from __future__ import annotations

from django.db.models import QuerySet

from context_app.models import ContextSettings, OptOut, TopicOverride


def context_settings_row() -> ContextSettings:
    """The settings row itself, read now (to edit it)."""
    return ContextSettings.load()


def context_settings_current() -> ContextSettings:
    """The settings as a turn uses them (cached for a few seconds; a copy)."""
    return ContextSettings.current()


def opt_outs_listed() -> QuerySet[OptOut]:
    return OptOut.objects.select_related("user").order_by("user__username")


def topic_overrides_listed() -> QuerySet[TopicOverride]:
    return TopicOverride.objects.select_related("user", "session").order_by(
        "user__username", "session_id"
    )
