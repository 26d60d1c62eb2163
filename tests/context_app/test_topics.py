"""Topics: inference from the tag inventory, headers after N turns, drift, overrides, summaries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from context_app.models import (
    ContextSettings,
    InjectionLog,
    SessionSummary,
    SessionTag,
    TopicOverride,
    TopicSummary,
)
from context_app.services.topics import tag_inventory, topic_candidates
from sessions_app.models import ChatSession
from tests.context_app.stream_helpers import generous_budget, stream_turn  # noqa: F401
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("generous_budget")]

SOURDOUGH = [
    "My sourdough starter smells like acetone, is sourdough baking still possible?",
    "How often should I feed the sourdough starter for baking on Sunday?",
    "What hydration works for sourdough baking with whole wheat?",
]
JAPAN = [
    "I am planning japan travel in April, which cities for japan travel?",
    "Is a rail pass worth it for japan travel between Tokyo and Kyoto?",
    "What should I pack for japan travel in spring?",
]


@pytest.fixture
def embeddings(fake_openai_embeddings):
    return fake_openai_embeddings


def tune(**fields) -> ContextSettings:
    row = ContextSettings.load()
    for name, value in fields.items():
        setattr(row, name, value)
    row.save()
    return row


def past_session(user, tag: str, summary: str, *, days_ago: int = 3) -> ChatSession:
    when = timezone.now() - timedelta(days=days_ago)
    session = ChatSession.objects.create(user=user, status="closed", opened_at=when, closed_at=when)
    SessionSummary.objects.create(session=session, user=user, summary=summary, created_at=when)
    SessionTag.objects.create(session=session, user=user, tag=tag, confidence=0.8)
    return session


def sourdough_history(user, sessions: int = 3):
    for index in range(sessions):
        past_session(
            user,
            "sourdough-baking",
            f"- The user feeds a rye sourdough starter twice a day (session {index}).\n"
            "- The user bakes sourdough loaves at 75% hydration.",
            days_ago=index + 1,
        )


def topic_headers(response) -> tuple:
    return tuple(
        response.get(name)
        for name in ("X-Reggie-Topic", "X-Reggie-Topic-Title", "X-Reggie-Topic-Score")
    )


def test_topic_headers_appear_after_n_turns(api, user, embeddings):
    ContextSettings.objects.update_or_create(pk=1, defaults={"min_user_turns": 3})
    sourdough_history(user)
    session = open_session(user)

    responses = [stream_turn(api, text, session_id=session.id, debug=True) for text in SOURDOUGH]

    assert topic_headers(responses[0][0]) == (None, None, None)
    assert topic_headers(responses[1][0]) == (None, None, None)
    key, title, score = topic_headers(responses[2][0])
    assert (key, title) == ("sourdough-baking", "Sourdough Baking")
    assert float(score) >= ContextSettings.load().topic_score_threshold
    assert responses[2][0]["X-Reggie-Topic-Source"] == "inferred"
    context = responses[2][1][0][1]
    assert context["topic"]["key"] == "sourdough-baking"
    # The topic summary was folded from the summaries of the sessions carrying the tag.
    assert "[Topic: Sourdough Baking]" in context["pack"]
    assert "75% hydration" in context["pack"]
    summary = TopicSummary.objects.get(user=user, key="sourdough-baking")
    assert len(summary.source_session_ids) == 3
    assert summary.expires_at > timezone.now()


def test_generic_chat_has_no_topic(api, user, embeddings):
    sourdough_history(user)
    session = open_session(user)
    for text in ["Hi there!", "Thanks, that's great.", "Ok, sure, cool."]:
        response, events, _ = stream_turn(api, text, session_id=session.id, debug=True)
    assert "X-Reggie-Topic" not in response
    assert events[0][1]["topic"] is None


def test_inventory_tags_outrank_new_keywords():
    texts = ["sourdough baking with my starter", "more sourdough baking questions"]
    with_history = topic_candidates(texts=texts, inventory={"sourdough-baking": 5, "knitting": 9})
    without = topic_candidates(texts=texts, inventory={})
    assert with_history[0].key == "sourdough-baking"
    assert "knitting" not in [choice.key for choice in with_history]
    assert with_history[0].score > next(c.score for c in without if c.key == "sourdough-baking")


def test_tag_inventory_counts_sessions_per_tag(user, other_user):
    sourdough_history(user, sessions=2)
    past_session(user, "japan-travel", "- Trip.")
    past_session(other_user, "sourdough-baking", "- Not yours.")
    assert tag_inventory(user=user, app_id="default") == {"sourdough-baking": 2, "japan-travel": 1}


def test_drift_replaces_the_topic_when_a_stronger_candidate_appears(api, user, embeddings):
    tune(refresh_cooldown_seconds=0, refresh_every_turns=1)
    sourdough_history(user)
    for index in range(3):
        past_session(
            user,
            "japan-travel",
            f"- The user plans a trip to Japan ({index}).",
            days_ago=10 + index,
        )
    session = open_session(user)
    for text in SOURDOUGH:
        response, _, _ = stream_turn(api, text, session_id=session.id)
    assert response["X-Reggie-Topic"] == "sourdough-baking"

    # One passing mention does not flip the topic...
    response, _, _ = stream_turn(
        api, "Also, japan travel later maybe, but sourdough baking first.", session_id=session.id
    )
    assert response["X-Reggie-Topic"] == "sourdough-baking"
    # ...a conversation that moved on does.
    for text in JAPAN:
        response, events, _ = stream_turn(api, text, session_id=session.id, debug=True)
    assert response["X-Reggie-Topic"] == "japan-travel"
    assert response["X-Reggie-Topic-Title"] == "Japan Travel"
    reasons = list(InjectionLog.objects.filter(session=session).values_list("reason", flat=True))
    assert any(reason.startswith("topic_changed") for reason in reasons)


def test_override_precedence_session_then_user_then_inference(api, user, embeddings, admin_user):
    sourdough_history(user)
    session = open_session(user)
    for text in SOURDOUGH[:2]:
        add_message(session, "user", text, run_hooks=False)

    user_override = TopicOverride.objects.create(
        user=user, title="Tax Return", created_by=admin_user
    )
    response, events, _ = stream_turn(api, SOURDOUGH[2], session_id=session.id, debug=True)
    assert topic_headers(response) == ("tax-return", "Tax Return", "1.00")
    assert response["X-Reggie-Topic-Source"] == "user_override"

    # A session override wins, and takes effect at once (inside the refresh cooldown).
    session_override = TopicOverride.objects.create(session=session, title="Wedding Plans")
    response, events, _ = stream_turn(
        api, "More sourdough baking.", session_id=session.id, debug=True
    )
    assert topic_headers(response)[:2] == ("wedding-plans", "Wedding Plans")
    assert response["X-Reggie-Topic-Source"] == "session_override"
    assert events[0][1]["reason"] == "override_changed"
    assert session_override.user_id == user.id

    session_override.delete()
    response, _, _ = stream_turn(api, "Sourdough baking again.", session_id=session.id)
    assert response["X-Reggie-Topic"] == "tax-return"

    user_override.delete()
    response, _, _ = stream_turn(api, "Sourdough baking starter.", session_id=session.id)
    assert (response["X-Reggie-Topic"], response["X-Reggie-Topic-Source"]) == (
        "sourdough-baking",
        "inferred",
    )


def test_another_users_override_does_not_apply(api, user, other_user, embeddings):
    TopicOverride.objects.create(user=other_user, title="Not Yours")
    session = open_session(user)
    for text in SOURDOUGH:
        response, _, _ = stream_turn(api, text, session_id=session.id)
    assert response.get("X-Reggie-Topic") != "not-yours"


def test_override_for_someone_elses_session_is_refused(user, other_user):
    session = open_session(other_user)
    override = TopicOverride(user=user, session=session, title="Mixed Up")
    with pytest.raises(ValidationError):
        override.full_clean()


def test_topic_summary_is_rebuilt_when_expired_and_kept_while_fresh(api, user, embeddings):
    tune(refresh_cooldown_seconds=0, refresh_every_turns=1)
    sourdough_history(user)
    TopicSummary.objects.create(
        user=user,
        key="sourdough-baking",
        title="Sourdough Baking",
        summary="- Stale digest nobody should see.",
        built_at=timezone.now() - timedelta(days=2),
        expires_at=timezone.now() - timedelta(days=1),
    )
    session = open_session(user)
    for text in SOURDOUGH:
        _, events, _ = stream_turn(api, text, session_id=session.id, debug=True)
    pack = events[0][1]["pack"]
    assert "Stale digest" not in pack and "75% hydration" in pack

    fresh = TopicSummary.objects.get(user=user, key="sourdough-baking")
    TopicSummary.objects.filter(id=fresh.id).update(summary="- Fresh digest kept until it expires.")
    _, events, _ = stream_turn(
        api, "Sourdough baking: any last tips?", session_id=session.id, debug=True
    )
    assert "Fresh digest kept until it expires." in events[0][1]["pack"]


def test_a_tag_ending_in_s_is_not_found_in_a_word_it_only_starts_like():
    """Tags are matched with the text layer's plural rule: the tag "canvas" (oil painting) is
    not "Canva" (the design tool) with an "s"."""
    texts = ["I designed the concert poster in Canva and exported the poster as a PDF."]
    scored = {
        choice.key for choice in topic_candidates(texts=texts, inventory={"canvas": 3, "poster": 2})
    }
    assert "canvas" not in scored
    assert "poster" in scored
