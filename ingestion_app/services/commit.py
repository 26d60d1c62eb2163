"""Commit to Memory: distill a chat session's new messages into atomic facts, exactly once.

The reference workflow (read the high-water mark, load newer messages, distill, embed, insert,
upsert the mark) in one service and one transaction. The facts, their history rows and the new
mark are written together or not at all, so a failed model call never half-commits and a retry
redoes exactly the same messages.

Two ways to distill:
- With an LLM: structured JSON output, first the facts of the transcript, then one ADD /
  UPDATE / NOOP decision per new fact against its nearest stored facts.
- Offline (no LLM configured): `memory_site.text.facts.extract_facts` per user message, and the
  documented `memory_site.text.fact_updates.is_update` rule against the nearest stored facts.
In both, a fact whose cosine similarity to a stored fact (or to one already taken in this
commit) reaches MNEMO_FACT_DUPLICATE_SIMILARITY is skipped as a duplicate before any decision.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ingestion_app.models import FactHistory, MemoryCommitLog, MemoryItem
from ingestion_app.selectors import facts_nearest_many, memory_get_for_user, session_project_id
from ingestion_app.services.memory_store import (
    MemoryScope,
    memory_item_build,
    memory_item_content_set,
    memory_items_bulk_create,
)
from memory_site.db_locks import advisory_transaction_lock
from memory_site.errors import UpstreamError
from memory_site.providers import ProviderError, get_embedder, get_llm, model_or_offline
from memory_site.redaction import redact
from memory_site.text.fact_updates import is_update
from memory_site.text.facts import extract_facts
from memory_site.text.keywords import tags
from memory_site.tokens import count_tokens
from sessions_app.models import ChatSession, Message
from sessions_app.selectors import session_get_for_user, session_messages
from sessions_app.services.usage import usage_record_json

logger = logging.getLogger(__name__)

# Stored facts shown to the decision step (LLM) or checked with is_update (offline) per new fact.
NEIGHBOURS_PER_FACT = 5
# Below this cosine similarity a stored fact is not about the same thing: not worth a decision.
CANDIDATE_MIN_SIMILARITY = 0.3
# One distillation call reads at most this many transcript tokens; longer backlogs take several.
TRANSCRIPT_WINDOW_TOKENS = 12_000
MAX_FACT_CHARS = 1_000

_ROLE_LABELS = {Message.Role.USER: "User", Message.Role.ASSISTANT: "Assistant"}
_SUBJECT_PREFIX = re.compile(r"^the user(?:'s)?\s+", re.IGNORECASE)

FACTS_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "source_message_ids": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["text", "source_message_ids"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}

DECISIONS_SCHEMA = {
    "type": "object",
    "properties": {
        "decisions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "fact_index": {"type": "integer"},
                    "event": {"type": "string", "enum": ["ADD", "UPDATE", "NOOP"]},
                    "memory_id": {"type": ["integer", "null"]},
                    "reason": {"type": "string"},
                },
                "required": ["fact_index", "event", "memory_id", "reason"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["decisions"],
    "additionalProperties": False,
}

DISTILL_PROMPT = """You turn a chat transcript into long-term memory: atomic facts about the user.

Rules:
- One claim per fact. Split "I live in Paris and work at Acme" into two facts.
- Self-contained: a fact must make sense on its own, months later, without the conversation.
  Call the user "The user" (or by their name if they gave it); write names instead of pronouns
  ("The user's sister Anna", never "she"); keep dates, places, numbers and names.
- Only durable information worth remembering: biography, preferences, relationships, plans,
  decisions, projects, constraints. No greetings, no questions, no small talk.
- Facts come from what the user says. Do not record the assistant's suggestions or guesses
  unless the user clearly accepted them.
- If the conversation changes something, state only the latest value.
- Keep placeholders such as [EMAIL] or [PHONE] exactly as written; never guess what they hide.
- source_message_ids: the ids in square brackets of the messages each fact comes from.
- Return {"facts": []} when there is nothing worth remembering."""

DECIDE_PROMPT = """You maintain a user's long-term memory. For each new fact you get the stored
memories most similar to it. Decide one event per new fact:
- ADD: new information, not stored yet (memory_id null).
- UPDATE: same subject, new value: the new fact replaces a stored memory that it makes
  outdated or wrong ("The user moved to Berlin" replaces "The user lives in Paris").
  memory_id is that stored memory's id.
- NOOP: the information is already stored (memory_id of the memory that has it, or null).
Give a short reason for each decision. Return one decision per fact_index."""


@dataclass
class CommittedFact:
    id: int
    content: str
    event: str  # FactHistory.Event.ADD or UPDATE
    previous_content: str = ""


@dataclass
class CommitResult:
    chat_session_id: str
    project_id: str
    messages_read: int
    facts_committed: int
    facts_updated: int
    duplicates_skipped: int
    high_water_mark: int
    toast_level: str
    toast_message: str
    facts: list[CommittedFact] = field(default_factory=list)

    @property
    def toast(self) -> dict:
        return {"level": self.toast_level, "message": self.toast_message}


@dataclass
class _Fact:
    """A distilled fact on its way to the store."""

    text: str
    source_message_ids: list[int]
    embedding: list[float] = field(default_factory=list)
    neighbours: list = field(default_factory=list)  # FactNeighbour, most similar first


@dataclass
class _Pending:
    """A rag_store row to insert; history collects its ADD and any update within this commit."""

    fact: _Fact
    history: list[tuple[str, str, str, str]] = field(default_factory=list)


@dataclass
class _Decision:
    event: str  # ADD | UPDATE | NOOP
    memory_id: int | None = None  # stored memory updated
    pending_index: int | None = None  # fact added earlier in this commit, updated
    reason: str = ""


def memory_commit(
    *, user, chat_session_id: uuid.UUID | str, rag_session_id: str = ""
) -> CommitResult:
    """Distill the session's messages above its high-water mark into facts; idempotent.

    Facts, their history and the new mark are written in one transaction. Commits of one user
    are serialized by a transaction-scoped advisory lock (and the session's commit-log row is
    locked FOR UPDATE), so concurrent calls distill each message once and the cross-session
    duplicate check always sees the facts of the commit before. No new messages: nothing is
    written. Raises NotFound (not the caller's session) and UpstreamError (LLM or embedder
    failed; nothing stored, mark unchanged).
    """
    session = session_get_for_user(user=user, session_id=chat_session_id, field="chat_session_id")
    MemoryCommitLog.objects.get_or_create(chat_session=session, defaults={"user": user})
    llm = get_llm()
    stage = "language model"
    try:
        with transaction.atomic():
            advisory_transaction_lock(f"memory-commit:user:{user.pk}")
            log = MemoryCommitLog.objects.select_for_update().get(chat_session=session)
            messages = list(session_messages(session=session, after_id=log.high_water_mark))
            project_id = session_project_id(session=session)
            if not messages:
                return CommitResult(
                    chat_session_id=str(session.id),
                    project_id=project_id,
                    messages_read=0,
                    facts_committed=0,
                    facts_updated=0,
                    duplicates_skipped=0,
                    high_water_mark=log.high_water_mark,
                    toast_level="info",
                    toast_message="No new messages since the last commit: nothing new to commit.",
                )
            facts = model_or_offline(
                lambda llm: _distill_with_llm(llm, user=user, session=session, messages=messages),
                lambda: _distill_offline(messages),
                llm=llm,
            )
            stage = "embedding model"
            _embed(facts)
            stage = "language model"
            kept, duplicates = _drop_duplicates(user=user, facts=facts)
            decisions = model_or_offline(
                lambda llm: _decide_with_llm(llm, user=user, session=session, facts=kept),
                lambda: _decide_offline(kept),
                llm=llm,
            )
            committed, updated, noops = _apply(
                user=user,
                session=session,
                project_id=project_id,
                rag_session_id=rag_session_id,
                facts=kept,
                decisions=decisions,
                messages=messages,
                model=llm.model,
            )
            duplicates += noops
            log.high_water_mark = max(log.high_water_mark, max(m.id for m in messages))
            log.commit_count += 1
            log.facts_committed += sum(1 for fact in committed if fact.event == "ADD")
            log.facts_updated += updated
            log.duplicates_skipped += duplicates
            log.last_commit_at = timezone.now()
            log.save()
    except ProviderError as exc:
        logger.warning("commit to memory failed for session %s: %s", session.id, exc)
        raise UpstreamError(
            f"The {stage} failed while committing to memory; nothing was stored and the "
            f"session's messages will be read again next time. ({exc})",
            code="commit_upstream_error",
        ) from exc
    added = sum(1 for fact in committed if fact.event == "ADD")
    level, message = _toast(
        messages_read=len(messages), added=added, updated=updated, duplicates=duplicates
    )
    return CommitResult(
        chat_session_id=str(session.id),
        project_id=project_id,
        messages_read=len(messages),
        facts_committed=added,
        facts_updated=updated,
        duplicates_skipped=duplicates,
        high_water_mark=log.high_water_mark,
        toast_level=level,
        toast_message=message,
        facts=committed,
    )


def _toast(*, messages_read: int, added: int, updated: int, duplicates: int) -> tuple[str, str]:
    noun = "message" if messages_read == 1 else "messages"
    if not added and not updated:
        known = f" ({duplicates} already known)" if duplicates else ""
        return "info", f"Read {messages_read} new {noun}: nothing new to remember{known}."
    parts = [f"{added} new fact{'' if added == 1 else 's'}"]
    if updated:
        parts.append(f"{updated} updated")
    if duplicates:
        parts.append(f"{duplicates} duplicate{'' if duplicates == 1 else 's'} skipped")
    return "success", f"Committed to memory from {messages_read} {noun}: " + ", ".join(parts) + "."


# ---------------------------------------------------------------------------------------------
# Distillation
# ---------------------------------------------------------------------------------------------


def _clean_fact(text: str) -> str:
    # Model output is derived from redacted text, but a model can still echo or invent PII.
    text = redact(" ".join(str(text).split()))
    return text[:MAX_FACT_CHARS].strip()


def _merge_same_text(facts: list[_Fact]) -> list[_Fact]:
    merged: dict[str, _Fact] = {}
    for fact in facts:
        key = fact.text.casefold().rstrip(".")
        if key in merged:
            ids = merged[key].source_message_ids
            ids.extend(i for i in fact.source_message_ids if i not in ids)
        else:
            merged[key] = fact
    return list(merged.values())


def _distill_offline(messages: list[Message]) -> list[_Fact]:
    """Facts from the user's own statements, each traced to the message it came from."""
    facts = []
    for message in messages:
        if message.role != Message.Role.USER:
            continue
        for text in extract_facts([("user", message.content_sanitized)]):
            cleaned = _clean_fact(text)
            if cleaned:
                facts.append(_Fact(text=cleaned, source_message_ids=[message.id]))
    return _merge_same_text(facts)


def _transcript_windows(messages: list[Message]) -> list[tuple[str, list[int]]]:
    """Transcript lines `[id] Role: text`, cut into windows of at most TRANSCRIPT_WINDOW_TOKENS.

    System messages are left out: they carry injected context (earlier memories), and
    distilling them would store memories of memories.
    """
    windows: list[tuple[str, list[int]]] = []
    lines: list[str] = []
    ids: list[int] = []
    tokens = 0
    for message in messages:
        label = _ROLE_LABELS.get(message.role)
        if label is None or not message.content_sanitized.strip():
            continue
        line = f"[{message.id}] {label}: {message.content_sanitized.strip()}"
        line_tokens = message.token_count or count_tokens(line)
        if lines and tokens + line_tokens > TRANSCRIPT_WINDOW_TOKENS:
            windows.append(("\n".join(lines), ids))
            lines, ids, tokens = [], [], 0
        lines.append(line)
        ids.append(message.id)
        tokens += line_tokens
    if lines:
        windows.append(("\n".join(lines), ids))
    return windows


def _chat_json_with_usage(
    llm, *, user, session, prompt: list[dict], schema: dict, name: str
) -> dict:
    """One structured call, with its usage row (counted by the provider)."""
    result = llm.chat_json(prompt, schema=schema, schema_name=name)
    usage_record_json(user=user, session=session, kind="facts", result=result)
    return result.data


def _distill_with_llm(llm, *, user, session: ChatSession, messages: list[Message]) -> list[_Fact]:
    facts: list[_Fact] = []
    for transcript, ids in _transcript_windows(messages):
        prompt = [
            {"role": "system", "content": DISTILL_PROMPT},
            {"role": "user", "content": f"Transcript:\n{transcript}"},
        ]
        payload = _chat_json_with_usage(
            llm, user=user, session=session, prompt=prompt, schema=FACTS_SCHEMA, name="memory_facts"
        )
        raw_facts = payload.get("facts")
        if not isinstance(raw_facts, list):
            raise ProviderError("LLM answer has no 'facts' list")
        window_ids = set(ids)
        user_ids = [m.id for m in messages if m.id in window_ids and m.role == Message.Role.USER]
        for item in raw_facts:
            # Defensive: accept bare strings and ignore ids that are not in this window.
            if isinstance(item, str):
                text, sources = item, []
            elif isinstance(item, dict):
                text, sources = item.get("text", ""), item.get("source_message_ids") or []
            else:
                continue
            if not isinstance(text, str):
                continue
            cleaned = _clean_fact(text)
            if not cleaned:
                continue
            source_ids = [i for i in sources if isinstance(i, int) and i in window_ids]
            facts.append(_Fact(text=cleaned, source_message_ids=source_ids or user_ids or ids))
    return _merge_same_text(facts)


# ---------------------------------------------------------------------------------------------
# Embedding, duplicates and decisions
# ---------------------------------------------------------------------------------------------


def _embed(facts: list[_Fact]) -> None:
    if not facts:
        return
    vectors = get_embedder().embed([fact.text for fact in facts])
    if len(vectors) != len(facts):
        raise ProviderError("the embedder returned a different number of vectors")
    for fact, vector in zip(facts, vectors, strict=True):
        fact.embedding = list(vector)


def _unit_matrix(facts: list[_Fact]) -> np.ndarray:
    """Rows are the facts' embeddings scaled to unit length, so a dot product is the cosine."""
    matrix = np.asarray([fact.embedding for fact in facts], dtype=np.float64)
    if not len(matrix):
        return matrix.reshape(0, 0)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def _drop_duplicates(*, user, facts: list[_Fact]) -> tuple[list[_Fact], int]:
    """Skip facts nearly identical to a stored fact or to one kept earlier in this commit;
    remember each kept fact's nearest stored facts for the decision step."""
    threshold = settings.MNEMO_FACT_DUPLICATE_SIMILARITY
    similarities = _unit_matrix(facts)
    similarities = similarities @ similarities.T if len(facts) else similarities
    kept: list[_Fact] = []
    kept_indexes: list[int] = []
    duplicates = 0
    neighbours = facts_nearest_many(
        user=user,
        embeddings=[fact.embedding for fact in facts],
        limit=NEIGHBOURS_PER_FACT,
        min_similarity=CANDIDATE_MIN_SIMILARITY,
    )
    for index, fact in enumerate(facts):
        fact.neighbours = neighbours[index]
        best_stored = fact.neighbours[0].similarity if fact.neighbours else 0.0
        best_batch = max((float(similarities[index, k]) for k in kept_indexes), default=0.0)
        if max(best_stored, best_batch) >= threshold:
            duplicates += 1
            continue
        kept.append(fact)
        kept_indexes.append(index)
    return kept, duplicates


def _decide_offline(facts: list[_Fact]) -> list[_Decision]:
    """The similarity rule: a fact updates the most similar stored fact (or fact added earlier
    in this commit) that `is_update` says it replaces; otherwise it is added."""
    decisions: list[_Decision] = []
    current_text: dict[int, str] = {}
    similarities = _unit_matrix(facts)
    similarities = similarities @ similarities.T if len(facts) else similarities
    for index, fact in enumerate(facts):
        options: list[tuple[float, int | None, int | None, str]] = [
            (n.similarity, n.id, None, current_text.get(n.id, n.content)) for n in fact.neighbours
        ]
        for earlier in range(index):
            if decisions[earlier].event != FactHistory.Event.ADD:
                continue
            similarity = float(similarities[index, earlier])
            if similarity >= CANDIDATE_MIN_SIMILARITY:
                options.append((similarity, None, earlier, facts[earlier].text))
        decision = _Decision(event=FactHistory.Event.ADD, reason="New information.")
        for similarity, memory_id, pending_index, text in sorted(options, key=lambda o: -o[0]):
            if is_update(text, fact.text):
                decision = _Decision(
                    event=FactHistory.Event.UPDATE,
                    memory_id=memory_id,
                    pending_index=pending_index,
                    reason=(
                        f'Same subject with a new value: replaces "{text}" '
                        f"(rule is_update, similarity {similarity:.2f})."
                    ),
                )
                if memory_id is not None:
                    current_text[memory_id] = fact.text
                break
        decisions.append(decision)
    return decisions


def _decide_with_llm(llm, *, user, session: ChatSession, facts: list[_Fact]) -> list[_Decision]:
    """The model decides ADD / UPDATE / NOOP for facts that have similar stored memories; a fact
    with none is an ADD without asking. Invalid answers fall back to ADD (never lose a fact)."""
    decisions = [
        _Decision(event=FactHistory.Event.ADD, reason="No similar memory stored.") for _ in facts
    ]
    asked = [index for index, fact in enumerate(facts) if fact.neighbours]
    if not asked:
        return decisions
    request = {
        "new_facts": [
            {
                "fact_index": index,
                "text": facts[index].text,
                "similar_memories": [
                    {"memory_id": n.id, "text": n.content} for n in facts[index].neighbours
                ],
            }
            for index in asked
        ]
    }
    prompt = [
        {"role": "system", "content": DECIDE_PROMPT},
        {"role": "user", "content": json.dumps(request, ensure_ascii=False)},
    ]
    payload = _chat_json_with_usage(
        llm,
        user=user,
        session=session,
        prompt=prompt,
        schema=DECISIONS_SCHEMA,
        name="memory_decisions",
    )
    answers = payload.get("decisions")
    if not isinstance(answers, list):
        raise ProviderError("LLM answer has no 'decisions' list")
    for answer in answers:
        if not isinstance(answer, dict):
            continue
        index = answer.get("fact_index")
        if not isinstance(index, int) or index not in asked:
            continue
        event = str(answer.get("event", "")).upper()
        reason = str(answer.get("reason") or "")[:500]
        allowed_ids = {n.id for n in facts[index].neighbours}
        memory_id = answer.get("memory_id")
        if event == FactHistory.Event.UPDATE and memory_id in allowed_ids:
            decisions[index] = _Decision(
                event=FactHistory.Event.UPDATE, memory_id=memory_id, reason=reason
            )
        elif event == "NOOP":
            decisions[index] = _Decision(event="NOOP", reason=reason)
        elif event == FactHistory.Event.UPDATE:
            logger.info("LLM chose UPDATE of memory %r, not a candidate; adding instead", memory_id)
            decisions[index] = _Decision(
                event=FactHistory.Event.ADD, reason="Model named an unknown memory to update."
            )
        else:
            decisions[index] = _Decision(
                event=FactHistory.Event.ADD, reason=reason or "New information."
            )
    return decisions


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _topics(text: str) -> list[str]:
    return [tag[:64] for tag in tags([_SUBJECT_PREFIX.sub("", text)], k=3)]


def _occurred_at(fact: _Fact, occurred: dict, *, default):
    times = [occurred[i] for i in fact.source_message_ids if i in occurred]
    return max(times) if times else default


def _apply(
    *,
    user,
    session: ChatSession,
    project_id: str,
    rag_session_id: str,
    facts: list[_Fact],
    decisions: list[_Decision],
    messages: list[Message],
    model: str,
) -> tuple[list[CommittedFact], int, int]:
    """Insert added facts and rewrite updated ones, with a history row for every change.
    Returns the stored facts, how many previously stored facts were updated and how many
    facts the model judged already known (NOOP)."""
    occurred = {message.id: message.created_at for message in messages}
    now = timezone.now()
    pending: list[_Pending] = []
    pending_of_fact: dict[int, int] = {}
    updated_rows: dict[int, CommittedFact] = {}
    updates = noops = 0
    for index, (fact, decision) in enumerate(zip(facts, decisions, strict=True)):
        if decision.event == "NOOP":
            noops += 1
        elif decision.event == FactHistory.Event.UPDATE and decision.pending_index is not None:
            target = pending[pending_of_fact[decision.pending_index]]
            target.history.append(
                (FactHistory.Event.UPDATE, target.fact.text, fact.text, decision.reason)
            )
            ids = fact.source_message_ids + [
                i for i in target.fact.source_message_ids if i not in fact.source_message_ids
            ]
            # Superseded before it was ever stored: one new fact, its history shows both values.
            target.fact = _Fact(text=fact.text, source_message_ids=ids, embedding=fact.embedding)
        elif decision.event == FactHistory.Event.UPDATE:
            item = memory_get_for_user(user=user, memory_id=decision.memory_id, lock=True)
            previous = item.content
            memory_item_content_set(
                item, content=fact.text, embedding=fact.embedding, embedding_text=""
            )
            item.topics = _topics(fact.text)
            item.chat_session = session
            item.rag_session_id = rag_session_id
            item.source_message_ids = sorted(fact.source_message_ids)
            item.occurred_at = _occurred_at(fact, occurred, default=now)
            item.metadata = {**(item.metadata or {}), "model": model, "updated_by_commit": True}
            item.save()
            FactHistory.objects.create(
                memory=item,
                user=user,
                event=FactHistory.Event.UPDATE,
                previous_content=previous,
                new_content=fact.text,
                reason=decision.reason,
            )
            earlier = updated_rows.get(item.id)
            updated_rows[item.id] = CommittedFact(
                id=item.id,
                content=fact.text,
                event=FactHistory.Event.UPDATE,
                previous_content=earlier.previous_content if earlier else previous,
            )
            updates += 1
        else:
            pending_of_fact[index] = len(pending)
            pending.append(
                _Pending(
                    fact=fact, history=[(FactHistory.Event.ADD, "", fact.text, decision.reason)]
                )
            )

    scope = MemoryScope.of_session(session, project_id=project_id, rag_session_id=rag_session_id)
    rows = []
    for entry in pending:
        fact = entry.fact
        rows.append(
            memory_item_build(
                scope=scope,
                source=MemoryItem.Source.FACT,
                content=fact.text,
                embedding=fact.embedding,
                topics=_topics(fact.text),
                metadata={"model": model},
                source_message_ids=sorted(fact.source_message_ids),
                occurred_at=_occurred_at(fact, occurred, default=now),
                created_at=now,
            )
        )
    created = memory_items_bulk_create(rows)
    FactHistory.objects.bulk_create(
        FactHistory(
            memory=item,
            user=user,
            event=event,
            previous_content=previous,
            new_content=new,
            reason=reason,
            created_at=now,
        )
        for item, entry in zip(created, pending, strict=True)
        for event, previous, new, reason in entry.history
    )
    committed = [CommittedFact(id=item.id, content=item.content, event="ADD") for item in created]
    committed.extend(updated_rows.values())
    return committed, updates, noops
