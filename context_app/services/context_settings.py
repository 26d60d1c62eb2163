"""Removing opt-outs and topic overrides from the settings page (adds go through its forms)."""

from __future__ import annotations

from context_app.models import OptOut, TopicOverride
from memory_site.errors import NotFound


def opt_out_delete(*, opt_out_id: int) -> OptOut:
    """Delete the opt-out and return it (its user gets stored context again); NotFound if gone."""
    opt_out = OptOut.objects.select_related("user").filter(id=opt_out_id).first()
    if opt_out is None:
        raise NotFound("No such opt-out.")
    opt_out.delete()
    return opt_out


def topic_override_delete(*, override_id: int) -> TopicOverride:
    """Delete the topic override and return it; NotFound if it is gone."""
    override = TopicOverride.objects.filter(id=override_id).first()
    if override is None:
        raise NotFound("No such topic override.")
    override.delete()
    return override
