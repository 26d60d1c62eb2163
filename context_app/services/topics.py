"""Topics of a conversation: inference, drift, admin overrides and topic summaries.

Inference is a cheap heuristic that fits the context pack's latency budget: keywords of the
user's turns (``mnemo_text.keywords``) are scored against the user's tag inventory (the
``SessionTag`` rows written when sessions close). A tag the user has talked about in many
sessions is a stronger candidate than a keyword seen only in this conversation; either must
reach ``topic_score_threshold``. An admin override (per session, then per user) always wins.

Topic summaries are extractive folds of the summaries of the sessions tagged with the topic, so
rebuilding one costs a query and some string work, never a model call.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from context_app.models import ContextSettings, SessionSummary, SessionTag, TopicSummary
from context_app.models.context import topic_key
from memory_site.raw_reads import raw_first
from mnemo_text.keywords import keywords as text_keywords
from mnemo_text.summaries import fold_summaries
from mnemo_text.words import plural_fold
from sessions_app.models import ChatSession, Message

logger = logging.getLogger(__name__)

# Weight of a candidate with no history (prevalence 0); a tag present in every one of the
# user's tagged sessions gets weight 1.
BASE_WEIGHT = 0.6
INVENTORY_LIMIT = 300
KEYWORDS_PER_INFERENCE = 12
SUMMARIES_PER_TOPIC = 12


@dataclass(frozen=True)
class TopicChoice:
    """The topic of a turn: `source` is inferred, session_override or user_override."""

    key: str
    title: str
    score: float
    source: str

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> TopicChoice | None:
        if not data or not data.get("key"):
            return None
        return cls(
            key=str(data["key"]),
            title=str(data.get("title") or data["key"]),
            score=float(data.get("score") or 0.0),
            source=str(data.get("source") or "inferred"),
        )


def _words(phrase: str) -> list[str]:
    return [plural_fold(word.lower()) for word in phrase.replace("-", " ").split() if word]


def topic_title(key_or_phrase: str) -> str:
    """ "japan-rail-pass" -> "Japan Rail Pass"."""
    words = key_or_phrase.replace("-", " ").split()
    return " ".join(word[:1].upper() + word[1:] for word in words)[:200]


def tag_inventory(*, user, app_id: str) -> dict[str, int]:
    """The user's tags in this app with the number of sessions carrying each (most used first).

    Plain SQL: this runs on every pack build, where the ORM's query compilation costs more
    than the query itself.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT tag.tag, count(*) AS sessions
                FROM {SessionTag._meta.db_table} AS tag
                JOIN {ChatSession._meta.db_table} AS session ON session.id = tag.session_id
                WHERE tag.user_id = %s AND session.app_id = %s
                GROUP BY tag.tag
                ORDER BY sessions DESC, sum(tag.confidence) DESC, tag.tag
                LIMIT %s""",
            [user.pk, app_id, INVENTORY_LIMIT],
        )
        return dict(cursor.fetchall())


def topic_candidates(*, texts: list[str], inventory: dict[str, int]) -> list[TopicChoice]:
    """Score every plausible topic for `texts`, best first (no threshold applied).

    An inventory tag scores the share of its words found among the keywords (each word weighted
    by its keyword's confidence), times a weight growing with how many sessions carry the tag.
    A keyword phrase that is not a known tag scores its confidence times BASE_WEIGHT.
    """
    keywords = text_keywords([text for text in texts if text], k=KEYWORDS_PER_INFERENCE)
    if not keywords:
        return []
    word_confidence: dict[str, float] = {}
    for phrase, confidence in keywords:
        for word in _words(phrase):
            word_confidence[word] = max(word_confidence.get(word, 0.0), confidence)
    most_sessions = max(inventory.values(), default=1) or 1
    candidates: dict[str, TopicChoice] = {}
    for tag, sessions in inventory.items():
        words = _words(tag)
        if not words:
            continue
        coverage = sum(word_confidence.get(word, 0.0) for word in words) / len(words)
        if coverage <= 0:
            continue
        weight = BASE_WEIGHT + (1 - BASE_WEIGHT) * (sessions / most_sessions)
        candidates[tag] = TopicChoice(
            key=tag, title=topic_title(tag), score=round(coverage * weight, 4), source="inferred"
        )
    for phrase, confidence in keywords:
        key = topic_key(phrase)
        if not key or key in candidates:
            continue
        candidates[key] = TopicChoice(
            key=key,
            title=topic_title(phrase),
            score=round(confidence * BASE_WEIGHT, 4),
            source="inferred",
        )
    return sorted(candidates.values(), key=lambda choice: (-choice.score, choice.key))


def _user_turn_texts(session: ChatSession, count: int) -> tuple[list[str], list[str]]:
    """Sanitized text of the first and of the latest `count` user turns (one query)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT content_sanitized FROM {Message._meta.db_table}
                WHERE id IN (
                  (SELECT id FROM {Message._meta.db_table}
                    WHERE session_id = %s AND role = %s ORDER BY id LIMIT %s)
                  UNION
                  (SELECT id FROM {Message._meta.db_table}
                    WHERE session_id = %s AND role = %s ORDER BY id DESC LIMIT %s))
                ORDER BY id""",
            [session.id, Message.Role.USER, count] * 2,
        )
        rows = [row[0] for row in cursor.fetchall()]
    return rows[:count], rows[-count:]


def topic_infer(
    *,
    session: ChatSession,
    current: TopicChoice | None,
    override: TopicChoice | None,
    context_settings: ContextSettings,
) -> tuple[TopicChoice | None, str]:
    """The topic for this turn and why: (topic or None, reason).

    `override` is the admin override in force for the session (the caller resolves it), which
    wins. Reasons: override, established (first inference), kept, drift (a stronger candidate
    replaced the current topic), none. Without a current inferred topic the first and latest
    turns are used together; with one, only the latest turns can make it drift, and only by
    beating its own score on those turns by `topic_drift_margin`.
    """
    if override is not None:
        return override, "override"
    threshold = context_settings.topic_score_threshold
    first, latest = _user_turn_texts(session, context_settings.topic_keyword_turns)
    inventory = tag_inventory(user=session.user, app_id=session.app_id)
    if current is None or current.source != "inferred":
        texts = list(dict.fromkeys(first + latest))
        candidates = topic_candidates(texts=texts, inventory=inventory)
        if candidates and candidates[0].score >= threshold:
            return candidates[0], "established"
        return None, "none"
    candidates = topic_candidates(texts=latest, inventory=inventory)
    if not candidates:
        return current, "kept"
    best = candidates[0]
    current_now = next((c.score for c in candidates if c.key == current.key), 0.0)
    if (
        best.key != current.key
        and best.score >= threshold
        and best.score >= current_now + context_settings.topic_drift_margin
    ):
        return best, "drift"
    return current, "kept"


def _relevant_summaries(*, user, app_id: str, key: str) -> list[tuple[str, str]]:
    """(session id, summary) of the sessions tagged with `key`, newest first; when no session
    carries the tag, summaries mentioning one of its words."""
    base = SessionSummary.objects.filter(user=user, session__app_id=app_id).order_by("-created_at")
    tagged = list(
        base.filter(session__tags__tag=key).values_list("session_id", "summary")[
            :SUMMARIES_PER_TOPIC
        ]
    )
    if tagged:
        return [(str(session_id), text) for session_id, text in tagged]
    words = [word for word in key.split("-") if len(word) >= 3]
    if not words:
        return []
    mention = Q()
    for word in words:
        mention |= Q(summary__icontains=word)
    rows = base.filter(mention).values_list("session_id", "summary")[:SUMMARIES_PER_TOPIC]
    return [(str(session_id), text) for session_id, text in rows]


def topic_summary_get_or_build(
    *, user, app_id: str, topic: TopicChoice, context_settings: ContextSettings
) -> TopicSummary:
    """The topic's summary, rebuilt first when missing or past its TTL.

    Idempotent (one row per user, app and topic key, upserted). The summary may be empty when
    no session summary relates to the topic; it is still stored so the lookup is not repeated
    until the TTL passes.
    """
    now = timezone.now()
    existing = raw_first(  # every context pack reads it
        TopicSummary,
        f"SELECT * FROM {TopicSummary._meta.db_table}"
        " WHERE user_id = %s AND app_id = %s AND key = %s",
        [user.pk, app_id, topic.key],
    )
    if existing is not None and existing.expires_at > now and existing.title == topic.title:
        return existing
    sources = _relevant_summaries(user=user, app_id=app_id, key=topic.key)
    summary = fold_summaries(
        [text for _, text in sources], max_chars=max(context_settings.topic_cap_chars, 200)
    )
    row, _ = TopicSummary.objects.update_or_create(
        user=user,
        app_id=app_id,
        key=topic.key,
        defaults={
            "title": topic.title,
            "summary": summary,
            "source_session_ids": [session_id for session_id, _ in sources],
            "built_at": now,
            "expires_at": now + timedelta(hours=context_settings.topic_summary_ttl_hours),
        },
    )
    return row
