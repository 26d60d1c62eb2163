"""Durable memory written when a session closes: mini summary, tags, title, user rollups.

The close pipeline runs in a django-q2 task (queued by sessions_app after the session flips to
`closing`). Everything slow (model calls, embeddings) happens before the single write
transaction, so a failure leaves nothing half-written: the session stays `closing` with the
error in `close_error`, and a retry is scheduled until Q_CLUSTER["max_attempts"] is reached.

With an LLM configured the digest and title come from it (JSON output); offline they come from
`mnemo_text`. Tags always come from the local keyword extractor: they are
"top keywords from the user's turns" with a confidence grounded in counts, which is exactly what
it computes, deterministically and for free.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_q.models import Schedule

from context_app.models import SessionSummary, SessionTag
from context_app.services.rollups import user_rollups_rebuild
from ingestion_app.models import MemoryItem
from ingestion_app.services.memory_store import MemoryScope, memory_item_create
from memory_site.db_locks import advisory_try_lock
from memory_site.providers import get_embedder, model_or_offline
from memory_site.providers.base import LLM, ProviderError
from memory_site.task_paths import SESSION_CLOSE_TASK
from memory_site.tokens import count_tokens
from mnemo_text.indexable import is_app_task
from mnemo_text.keywords import keywords
from mnemo_text.keywords import title as local_title
from mnemo_text.redaction import redact
from mnemo_text.summaries import summarize
from sessions_app.models import ChatSession, Message
from sessions_app.services.usage import usage_record_json
from webhooks_app.services.events import SESSION_CLOSED, event_emit

logger = logging.getLogger(__name__)

SESSION_SUMMARY_KIND = "session_summary"
# Seconds before the 2nd, 3rd... attempt of a failed close.
RETRY_DELAYS_SECONDS = (60, 300, 900)
# What an LLM is shown of one session; longer sessions keep their newest turns.
MAX_TRANSCRIPT_TOKENS = 12_000
MAX_TAGS = 8
MIN_TAG_CONFIDENCE = 0.12
MIN_TAG_CHARS, MAX_TAG_CHARS = 3, 40
UNTITLED = "Untitled Conversation"

DIGEST_SCHEMA = {
    "type": "object",
    "properties": {
        "points": {"type": "array", "items": {"type": "string"}},
        "title": {"type": "string"},
    },
    "required": ["points", "title"],
    "additionalProperties": False,
}

DIGEST_INSTRUCTIONS = (
    "You write the long-term memory of a chat assistant. Read the conversation and return JSON "
    'with "points": 3 to 8 short bullet points (one sentence each, no leading dash) recording '
    "what the user said about themselves, their goals, decisions, preferences, plans and open "
    "questions, and what was concluded; refer to the user as 'the user'; do not quote the "
    "transcript or replay it turn by turn; skip greetings and small talk. "
    'Also return "title": a 3-5 word title for the conversation, no quotes or final period.'
)


@dataclass
class Digest:
    """What a model (or the local summarizer) made of a span of messages."""

    summary: str
    model: str
    title: str = ""


@dataclass
class SessionDigest:
    summary: str
    model: str
    title: str
    tags: list[tuple[str, float]]
    session_date: datetime
    message_count: int
    header: str = ""
    embedding: list[float] | None = None
    embedding_text: str = ""
    tokens: int = 0
    extra: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Summaries, titles and tags (shared with consolidation)
# --------------------------------------------------------------------------------------------


def turns_of(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """(role, sanitized text) of the user and assistant messages, in order; a chat app's task
    prompt and the reply to it (a title, tags: `is_app_task`) are not the conversation."""
    turns = []
    in_task = False
    for message in messages:
        if message.role == Message.Role.USER:
            in_task = is_app_task(message.content_sanitized)
        if (
            message.role in (Message.Role.USER, Message.Role.ASSISTANT)
            and message.content_sanitized.strip()
            and not message.is_no_model_reply
            and not in_task
        ):
            turns.append((message.role, message.content_sanitized))
    return turns


def _transcript(turns: list[tuple[str, str]], *, max_tokens: int) -> str:
    """The newest turns that fit max_tokens, oldest first, with a note of what was left out."""
    lines: list[str] = []
    used = 0
    for role, text in reversed(turns):
        line = f"{'User' if role == Message.Role.USER else 'Assistant'}: {text.strip()}"
        cost = count_tokens(line)
        if used + cost > max_tokens and lines:
            break
        lines.append(line)
        used += cost
    omitted = len(turns) - len(lines)
    lines.reverse()
    if omitted:
        lines.insert(0, f"({omitted} earlier messages are not shown.)")
    return "\n\n".join(lines)


def _clean_point(point: object) -> str:
    if not isinstance(point, str):
        return ""
    point = re.sub(r"^\s*(?:[-*•]+|\d{1,2}[.)])\s*", "", point).strip()
    point = re.sub(r"\s+", " ", point)
    return point[:300]


def _fit_lines(points: list[str], max_chars: int) -> str:
    lines: list[str] = []
    used = 0
    for point in points:
        line = f"- {point}"
        cost = len(line) + (1 if lines else 0)
        if used + cost > max_chars:
            if not lines:
                lines.append(line[: max(max_chars - 1, 1)].rstrip() + "…")
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)


def clean_title(title: object, *, fallback_texts: list[str]) -> str:
    """A 3-5 word title: the model's if usable, else the local one; "" when there is no topic."""
    words = re.sub(r"[\"'“”‘’`*#]", "", title).split() if isinstance(title, str) else []
    words = [word.strip(".:;,!") for word in words if word.strip(".:;,!")]
    if len(words) >= 3:
        return " ".join(words[:5])[:200]
    local = local_title(fallback_texts)
    return "" if local == UNTITLED else local


def transcript_digest(
    *,
    turns: list[tuple[str, str]],
    max_chars: int,
    user,
    session: ChatSession | None,
    want_title: bool,
    offline_only: bool = False,
) -> Digest:
    """A bullet digest (never a replay) of sanitized turns, plus a title when asked.

    Uses the configured LLM (JSON schema output, one UsageLog row of kind "summary") or, offline
    (or with `offline_only`), the local summarizer. Raises ProviderError if the model fails or
    returns no usable points: callers retry rather than store a worse digest silently.
    """
    user_texts = [text for role, text in turns if role == Message.Role.USER]
    if not turns:
        return Digest(summary="", model="")

    def offline() -> Digest:
        title = clean_title(None, fallback_texts=user_texts) if want_title else ""
        return Digest(summary=summarize(turns, max_chars=max_chars), model="local", title=title)

    if offline_only:
        return offline()
    return model_or_offline(
        lambda llm: _digest_with_llm(
            llm,
            turns=turns,
            max_chars=max_chars,
            user=user,
            session=session,
            want_title=want_title,
        ),
        offline,
    )


def _digest_with_llm(
    llm: LLM,
    *,
    turns: list[tuple[str, str]],
    max_chars: int,
    user,
    session: ChatSession | None,
    want_title: bool,
) -> Digest:
    user_texts = [text for role, text in turns if role == Message.Role.USER]
    messages = [
        {"role": "system", "content": DIGEST_INSTRUCTIONS},
        {"role": "user", "content": _transcript(turns, max_tokens=MAX_TRANSCRIPT_TOKENS)},
    ]
    result = llm.chat_json(messages, schema=DIGEST_SCHEMA, schema_name="session_digest")
    usage_record_json(
        user=user,
        session=session,
        kind="summary",
        result=result,
        app_id=session.app_id if session else None,
    )
    data = result.data
    raw_points = data.get("points")
    points = (
        [p for p in (_clean_point(p) for p in raw_points or []) if p]
        if isinstance(raw_points, list)
        else []
    )
    if not points:
        raise ProviderError("the model returned no summary points")
    # A model may echo PII it inferred; the digest is stored and injected, so redact it again.
    summary = redact(_fit_lines(points, max_chars))
    title = clean_title(data.get("title"), fallback_texts=user_texts) if want_title else ""
    return Digest(summary=summary, model=llm.model, title=redact(title) if title else "")


def _kebab(phrase: str) -> str:
    return re.sub(r"[^\w]+", "-", phrase.lower()).strip("-_")


def session_tags(user_texts: list[str]) -> list[tuple[str, float]]:
    """Top keywords of the user's turns as kebab-case tags with a confidence in [0, 1].

    Stop-words, chat filler, numbers and placeholders never qualify (mnemo_text.keywords);
    tags shorter than 3 or longer than 40 characters, weaker than MIN_TAG_CONFIDENCE, or whose
    words all sit inside a stronger tag are dropped. At most MAX_TAGS, best first.
    """
    chosen: list[tuple[str, float]] = []
    chosen_words: list[set[str]] = []
    for phrase, confidence in keywords(user_texts, k=MAX_TAGS * 2):
        tag = _kebab(phrase)
        if confidence < MIN_TAG_CONFIDENCE or not MIN_TAG_CHARS <= len(tag) <= MAX_TAG_CHARS:
            continue
        words = set(tag.split("-"))
        if any(tag == earlier for earlier, _ in chosen) or any(
            words <= earlier for earlier in chosen_words
        ):
            continue
        chosen.append((tag, round(float(confidence), 3)))
        chosen_words.append(words)
        if len(chosen) == MAX_TAGS:
            break
    return chosen


def summary_header(*, title: str, date: datetime, what: str = "the conversation") -> str:
    day = date.date().isoformat()
    if title:
        return f'Summary of {what} "{title}" from {day}.'
    return f"Summary of {what} from {day}."


# --------------------------------------------------------------------------------------------
# Session close
# --------------------------------------------------------------------------------------------


def session_date_of(session: ChatSession, messages: Sequence[Message]) -> datetime:
    """The session's own date: its last message's time (historical imports keep theirs)."""
    if messages:
        return max(message.created_at for message in messages)
    return session.last_activity_at or session.opened_at


def session_digest_build(*, session: ChatSession, offline_only: bool = False) -> SessionDigest:
    """Summary, title proposal, tags and embedding of a session, computed without writing.

    Raises ProviderError (model or embedder failure). A session without user or assistant
    text gives an empty digest: it is closed with no summary, tags or title. `offline_only`:
    the local summarizer even when a model is configured.
    """
    messages = list(
        Message.objects.filter(session=session)
        .exclude(role=Message.Role.SYSTEM)
        .only("id", "role", "model", "content_sanitized", "created_at")
        .order_by("id")
    )
    turns = turns_of(messages)
    session_date = session_date_of(session, messages)
    digest = transcript_digest(
        turns=turns,
        max_chars=settings.MNEMO_SESSION_SUMMARY_MAX_CHARS,
        user=session.user,
        session=session,
        want_title=not session.title,
        offline_only=offline_only,
    )
    user_texts = [text for role, text in turns if role == Message.Role.USER]
    result = SessionDigest(
        summary=digest.summary.strip(),
        model=digest.model,
        title=digest.title,
        tags=session_tags(user_texts) if digest.summary.strip() else [],
        session_date=session_date,
        message_count=len(messages),
    )
    if result.summary:
        title = result.title or redact(session.title)
        result.header = summary_header(title=title, date=session_date)
        result.embedding_text = f"{result.header}\n\n{result.summary}"
        result.embedding = get_embedder().embed([result.embedding_text])[0]
        result.tokens = count_tokens(result.summary)
        result.extra = {"title": title}
    return result


def session_digest_store(
    *, session_id, digest: SessionDigest, allowed_statuses: tuple[str, ...]
) -> bool:
    """Write a digest and mark the session closed, in one transaction; False if not allowed.

    Locks the session row (SELECT ... FOR UPDATE) and the user's rollups (advisory lock), then:
    replaces the SessionSummary, the tags and the summary's searchable copy in rag_store, sets
    the title if the session has none, marks the session closed and rebuilds the user's
    rollups. Does nothing and returns False when the session's status is not allowed (another
    worker closed it first), which is what makes a second close write no second summary.
    """
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().filter(id=session_id).first()
        if session is None or session.status not in allowed_statuses:
            return False
        if digest.summary:
            SessionSummary.objects.update_or_create(
                session=session,
                defaults={
                    "user_id": session.user_id,
                    "summary": digest.summary,
                    "token_estimate": digest.tokens,
                    "model": digest.model,
                },
            )
        else:
            SessionSummary.objects.filter(session=session).delete()
        SessionTag.objects.filter(session=session).delete()
        SessionTag.objects.bulk_create(
            SessionTag(session=session, user_id=session.user_id, tag=tag, confidence=confidence)
            for tag, confidence in digest.tags
        )
        MemoryItem.objects.filter(
            chat_session=session,
            source=MemoryItem.Source.SUMMARY,
            metadata__kind=SESSION_SUMMARY_KIND,
        ).delete()
        if not session.title and digest.title:
            session.title = digest.title[:200]
        if digest.summary:
            memory_item_create(
                scope=MemoryScope.of_session(session),
                source=MemoryItem.Source.SUMMARY,
                content=digest.summary,
                header=digest.header,
                embedding=digest.embedding,
                embedding_text=digest.embedding_text,
                topics=[tag for tag, _ in digest.tags[:3]],
                metadata={
                    "kind": SESSION_SUMMARY_KIND,
                    "session_id": str(session.id),
                    "title": digest.extra.get("title", ""),
                    "tags": [tag for tag, _ in digest.tags],
                    "message_count": digest.message_count,
                    "model": digest.model,
                    "session_date": digest.session_date.isoformat(),
                },
                token_count=digest.tokens,
                occurred_at=digest.session_date,
            )
        session.status = ChatSession.Status.CLOSED
        session.closed_at = session.closed_at or timezone.now()
        session.close_error = ""
        session.save(update_fields=["title", "status", "closed_at", "close_error"])
        user_rollups_rebuild(user_id=session.user_id, app_id=session.app_id)
    return True


def session_close_run(*, session_id) -> str:
    """Run the close pipeline for a `closing` session: once and only once per session.

    Returns "closed", "skipped" (not `closing`: already closed, or never closed), "busy"
    (another worker holds the session) or "failed". A failure is recorded on the session
    (`close_error`, `close_attempts`), the session stays `closing` with nothing written, and a
    retry is scheduled while attempts remain; the exception is logged, not raised, so a close
    request served with synchronous tasks still answers. When the model still fails on the
    last attempt (down, or unable to give the structured answer), the session is closed with
    the local summarizer's digest and `close_error` says so: a chat's memory is not held back
    by its summary (the admin's "re-summarize" action redoes it with the model later).
    """
    with advisory_try_lock(f"session-close:{session_id}") as acquired:
        if not acquired:
            return "busy"
        claimed = ChatSession.objects.filter(
            id=session_id, status=ChatSession.Status.CLOSING
        ).update(close_attempts=F("close_attempts") + 1)
        if not claimed:
            return "skipped"
        fallback = ""
        try:
            session = ChatSession.objects.select_related("user").get(id=session_id)
            try:
                digest = session_digest_build(session=session)
            except ProviderError as exc:
                if session.close_attempts < _max_close_attempts():
                    raise
                fallback = (
                    f"closed with the local summarizer after {session.close_attempts} failed "
                    f"model attempts: {type(exc).__name__}: {exc}"
                )[:800]
                logger.warning("session %s: %s", session_id, fallback)
                digest = session_digest_build(session=session, offline_only=True)
            stored = session_digest_store(
                session_id=session_id,
                digest=digest,
                allowed_statuses=(ChatSession.Status.CLOSING,),
            )
        except Exception as exc:
            logger.exception("closing session %s failed", session_id)
            _close_failed(session_id=session_id, error=exc, retry=True)
            return "failed"
        if stored and fallback:
            ChatSession.objects.filter(id=session_id).update(close_error=fallback)
        if stored:
            _session_closed_emit(session=session, digest=digest)
    return "closed" if stored else "skipped"


def _session_closed_emit(*, session: ChatSession, digest: SessionDigest) -> None:
    closed = ChatSession.objects.filter(id=session.id).values("title", "closed_at").first() or {}
    event_emit(
        user_id=session.user_id,
        event=SESSION_CLOSED,
        data={
            "session_id": str(session.id),
            "app_id": session.app_id,
            "title": closed.get("title") or digest.title,
            "summary": digest.summary,
            "tags": [tag for tag, _ in digest.tags],
            "message_count": digest.message_count,
            "closed_at": closed.get("closed_at"),
        },
    )


def _max_close_attempts() -> int:
    return int(settings.Q_CLUSTER.get("max_attempts") or 3)


def session_resummarize(*, session_id) -> str:
    """Rebuild the summary, tags and rollups of a closed (or stuck `closing`) session.

    Idempotent (the previous summary, tags and summary memory are replaced, not added to); sets
    a title only if the session still has none. An open session is left alone ("skipped").
    A failure is recorded in `close_error` without scheduling retries.
    """
    allowed = (ChatSession.Status.CLOSING, ChatSession.Status.CLOSED)
    with advisory_try_lock(f"session-close:{session_id}") as acquired:
        if not acquired:
            return "busy"
        session = ChatSession.objects.select_related("user").filter(id=session_id).first()
        if session is None or session.status not in allowed:
            return "skipped"
        try:
            digest = session_digest_build(session=session)
            stored = session_digest_store(
                session_id=session_id, digest=digest, allowed_statuses=allowed
            )
        except Exception as exc:
            logger.exception("re-summarizing session %s failed", session_id)
            _close_failed(session_id=session_id, error=exc, retry=False)
            return "failed"
    return "resummarized" if stored else "skipped"


def _close_failed(*, session_id, error: Exception, retry: bool) -> None:
    """Record the error on the session and, while attempts remain, schedule the next one."""
    attempts = (
        ChatSession.objects.filter(id=session_id).values_list("close_attempts", flat=True).first()
        or 0
    )
    max_attempts = _max_close_attempts()
    detail = f"{type(error).__name__}: {error}"[:800]
    if retry and attempts < max_attempts:
        delay = RETRY_DELAYS_SECONDS[min(attempts, len(RETRY_DELAYS_SECONDS)) - 1]
        next_run = timezone.now() + timedelta(seconds=delay)
        Schedule.objects.create(
            name=f"close-retry-{session_id}-{attempts + 1}"[:100],
            func=SESSION_CLOSE_TASK,
            args=repr(str(session_id)),
            schedule_type=Schedule.ONCE,
            repeats=-1,
            next_run=next_run,
        )
        message = (
            f"attempt {attempts}/{max_attempts} failed: {detail}; "
            f"retry scheduled at {next_run.isoformat(timespec='seconds')}"
        )
    elif retry:
        message = f"gave up after {attempts} attempts: {detail}"
    else:
        message = f"re-summarize failed: {detail}"
    ChatSession.objects.filter(id=session_id).update(close_error=message)
