"""Context settings, opt-outs, overrides and the injection log in Django admin."""

from __future__ import annotations

import pytest

from context_app.models import ContextSettings, InjectionLog, OptOut, TopicOverride, UserChatSummary
from context_app.services.context_pack import prepare_context
from tests.context_app.stream_helpers import generous_budget  # noqa: F401
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("generous_budget")]


def settings_form(row: ContextSettings, **changes) -> dict:
    fields = [
        "min_user_turns",
        "total_cap_chars",
        "recent_cap_chars",
        "history_cap_chars",
        "topic_cap_chars",
        "memories_cap_chars",
        "max_context_share",
        "reply_reserve_tokens",
        "attachment_cap_chars",
        "memory_top_k",
        "memory_min_similarity",
        "memory_recency_half_life_days",
        "topic_keyword_turns",
        "topic_score_threshold",
        "topic_drift_margin",
        "topic_summary_ttl_hours",
        "refresh_every_turns",
        "refresh_every_minutes",
        "refresh_cooldown_seconds",
        "latency_budget_ms",
    ]
    form = {name: getattr(row, name) for name in fields}
    if row.augmentation_enabled:
        form["augmentation_enabled"] = "on"
    if row.verbose_logging:
        form["verbose_logging"] = "on"
    form.update(changes)
    return {key: value for key, value in form.items() if value is not None}


def test_settings_list_opens_the_single_row(staff_client):
    response = staff_client.get("/admin/context_app/contextsettings/")
    assert response.status_code == 302
    assert response["Location"].endswith("/admin/context_app/contextsettings/1/change/")
    page = staff_client.get(response["Location"])
    assert page.status_code == 200
    assert b"verbose_logging" in page.content and b"total_cap_chars" in page.content
    assert staff_client.get("/admin/context_app/contextsettings/add/").status_code == 403


def test_a_settings_edit_applies_to_the_next_turn_without_restart(
    staff_client, user, fake_openai_embeddings
):
    UserChatSummary.objects.create(
        user=user, kind="recent", summary="- The user bakes rye bread every weekend."
    )
    ContextSettings.objects.update_or_create(pk=1, defaults={"min_user_turns": 3})
    session = open_session(user)
    message = add_message(session, "user", "Rye bread again.", run_hooks=False)
    assert prepare_context(session=session, user_message=message).reason == "too_few_turns"

    row = ContextSettings.load()
    response = staff_client.post(
        f"/admin/context_app/contextsettings/{row.pk}/change/",
        settings_form(row, min_user_turns=1, verbose_logging="on", total_cap_chars=500),
    )
    assert response.status_code == 302, response.content[:2000]

    session.refresh_from_db()
    pack = prepare_context(session=session, user_message=message)
    assert pack.status == "built"
    assert len(pack.text) <= 500
    assert ContextSettings.load().verbose_logging is True


def test_invalid_settings_are_refused(staff_client):
    row = ContextSettings.load()
    response = staff_client.post(
        f"/admin/context_app/contextsettings/{row.pk}/change/",
        settings_form(row, total_cap_chars=10, max_context_share=1.5),
    )
    assert response.status_code == 200  # the form again, with errors
    assert ContextSettings.load().total_cap_chars == 3000


def test_opt_out_and_override_are_managed_in_admin(staff_client, user):
    page = staff_client.get("/admin/context_app/optout/")
    assert page.status_code == 200
    assert (
        staff_client.post(
            "/admin/context_app/optout/add/", {"user": user.pk, "reason": "asked"}
        ).status_code
        == 302
    )
    assert OptOut.objects.filter(user=user).exists()

    session = open_session(user)
    added = staff_client.post(
        "/admin/context_app/topicoverride/add/",
        {
            "user": user.pk,
            "session": str(session.id),
            "title": "Wedding Plans",
            "key": "",
            "note": "",
        },
    )
    assert added.status_code == 302
    override = TopicOverride.objects.get(user=user)
    assert (override.key, override.session_id) == ("wedding-plans", session.id)


def test_injection_log_is_readable_not_editable(staff_client, user, fake_openai_embeddings):
    ContextSettings.objects.update_or_create(pk=1, defaults={"min_user_turns": 1})
    UserChatSummary.objects.create(user=user, kind="recent", summary="- The user bakes rye bread.")
    session = open_session(user)
    message = add_message(session, "user", "Rye?", run_hooks=False)
    pack = prepare_context(session=session, user_message=message)
    log = InjectionLog.objects.get(id=pack.injection_log_id)

    listing = staff_client.get("/admin/context_app/injectionlog/")
    assert listing.status_code == 200
    detail = staff_client.get(f"/admin/context_app/injectionlog/{log.id}/change/")
    assert detail.status_code == 200
    assert b"The user bakes rye bread." in detail.content
    assert b"Recent context" in detail.content
    assert (
        staff_client.post(f"/admin/context_app/injectionlog/{log.id}/change/", {}).status_code
        == 403
    )
