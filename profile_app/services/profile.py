"""Writes of the user profile: statements learned from chats, commits and imports, and the
user's own additions, edits and deletions.

Every write for one user and app runs under one advisory lock, so two messages read at once
cannot both replace the same entry. The newer-replaces-older rule
(`mnemo_text.profile_statements.replaces`) compares `stated_at`: a statement older than
the entry it would replace (an old import) is kept as history, already superseded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from imports_app.models import ImportFile
from ingestion_app.models import MemoryItem
from ingestion_app.services.import_passages import PASSAGE_GRANULARITY
from memory_site.db_locks import advisory_transaction_lock
from memory_site.errors import NotFound
from memory_site.providers import LLM, ProviderError, get_llm
from memory_site.task_paths import PROFILE_MESSAGE_READ_TASK
from mnemo_text.profile_statements import (
    FACT,
    WITHDRAWAL,
    ProfileStatement,
    profile_statements,
    replaces,
    statement_slot,
    statement_terms,
)
from mnemo_text.redaction import redact
from profile_app.models import ProfileEntry
from profile_app.selectors import profile_entry_get_for_user, profile_entry_history
from sessions_app.models import Message
from sessions_app.selectors import chat_sessions
from sessions_app.services.usage import usage_record_json

logger = logging.getLogger(__name__)

MAX_ENTRY_CHARS = 500
# Instructions, preferences and facts a model may return for one message.
MAX_MODEL_STATEMENTS = 10

PROFILE_SCHEMA_NAME = "profile_statements"
PROFILE_SCHEMA = {
    "type": "object",
    "properties": {
        "statements": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {
                        "type": "string",
                        "enum": ["instruction", "preference", "fact", "withdrawal"],
                    },
                    "text": {"type": "string"},
                    "slot": {"type": "string"},
                    "replaces": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["kind", "text", "slot", "replaces"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["statements"],
    "additionalProperties": False,
}
PROFILE_PROMPT = (
    "You maintain a user's profile for an assistant: standing instructions (how the user wants "
    "every future answer: 'always...', 'never...', 'from now on...', 'answer in...'), "
    "preferences (what they prefer, like or dislike, tools and styles they chose) and facts "
    "about who they are (name, home, work, family, pets, the software they are building). "
    "Read the user's message and return "
    "only what it newly states for the long term; a one-off request is not an instruction. "
    "Write each statement as the user would, in one sentence (facts as 'Label: value'). "
    "'slot' names what a fact or instruction is about ('name', 'home', 'employer', 'project', "
    "'language', 'answer_length'; '' when none). 'replaces' lists the ids of current entries "
    "the statement changes or takes back; a 'withdrawal' takes entries back without a new one. "
    "Leave out what the current entries already say. Return an empty list when the message "
    "states nothing of the kind."
)


@dataclass(frozen=True)
class StatementSource:
    """Where statements come from: who, which app, when, and the message or memory."""

    user_id: int
    app_id: str
    origin: str
    stated_at: datetime
    message_id: int | None = None
    memory_id: int | None = None
    message_ids: tuple[int, ...] = ()


def _lock(user_id: int, app_id: str) -> None:
    advisory_transaction_lock(f"profile:{user_id}:{app_id}")


def _active(user_id: int, app_id: str) -> list[ProfileEntry]:
    return list(
        ProfileEntry.objects.filter(
            user_id=user_id, app_id=app_id, status=ProfileEntry.Status.ACTIVE
        ).order_by("stated_at", "id")
    )


def _supersede(entries: Iterable[ProfileEntry], *, by: ProfileEntry | None, status: str) -> None:
    now = timezone.now()
    for entry in entries:
        entry.status = status
        entry.superseded_by = by
        entry.superseded_at = now
        entry.save(update_fields=["status", "superseded_by", "superseded_at", "updated_at"])


def _read_before(kind: str, text: str, source: StatementSource) -> bool:
    if source.message_id is None and source.memory_id is None:
        return False
    entries = ProfileEntry.objects.filter(user_id=source.user_id, kind=kind, text=text)
    if source.message_id is not None:
        return entries.filter(source_message_id=source.message_id).exists()
    return entries.filter(source_memory_id=source.memory_id).exists()


def _statement_apply(
    statement: ProfileStatement,
    source: StatementSource,
    active: list[ProfileEntry],
    *,
    replaced_ids: Iterable[int] | None = None,
) -> ProfileEntry | None:
    """Apply one statement to the active entries (updated in place); returns the new entry.

    `replaced_ids`: the entries a model said the statement replaces (checked against
    `active`); without them the rule decides.
    """
    text = redact(statement.text)[:MAX_ENTRY_CHARS].strip()
    if not text:
        return None
    same = next(
        (e for e in active if e.kind == statement.kind and e.text.lower() == text.lower()), None
    )
    if same is not None:
        return None  # said again: the entry stands
    if _read_before(statement.kind, text, source):
        return None  # the same message or memory read again (a repeated task, a re-read)
    if replaced_ids is not None:
        wanted = set(replaced_ids)
        replaced = [entry for entry in active if entry.id in wanted]
    else:
        replaced = [
            entry
            for entry in active
            if replaces(statement, entry.kind, entry.slot, tuple(entry.terms))
        ]
    newer = [entry for entry in replaced if entry.stated_at > source.stated_at]
    older = [entry for entry in replaced if entry.stated_at <= source.stated_at]
    if statement.kind == WITHDRAWAL:
        _supersede(older, by=None, status=ProfileEntry.Status.WITHDRAWN)
        for entry in older:
            active.remove(entry)
        return None
    entry = ProfileEntry.objects.create(
        user_id=source.user_id,
        app_id=source.app_id,
        kind=statement.kind,
        status=ProfileEntry.Status.SUPERSEDED if newer else ProfileEntry.Status.ACTIVE,
        origin=source.origin,
        text=text,
        slot=statement.slot[:128],
        terms=[term[:64] for term in statement.terms][:40],
        source_message_id=source.message_id,
        source_memory_id=source.memory_id,
        source_message_ids=list(source.message_ids),
        stated_at=source.stated_at,
        superseded_by=max(newer, key=lambda e: e.stated_at) if newer else None,
        superseded_at=timezone.now() if newer else None,
    )
    if newer:
        return entry
    _supersede(older, by=entry, status=ProfileEntry.Status.SUPERSEDED)
    for old in older:
        active.remove(old)
    active.append(entry)
    return entry


def statements_apply(
    statements: list[ProfileStatement], source: StatementSource
) -> list[ProfileEntry]:
    """Apply statements in the order said, in one transaction under the profile lock."""
    if not statements:
        return []
    with transaction.atomic():
        _lock(source.user_id, source.app_id)
        active = _active(source.user_id, source.app_id)
        created = [_statement_apply(statement, source, active) for statement in statements]
    return [entry for entry in created if entry is not None]


def profile_learn(*, text: str, source: StatementSource) -> list[ProfileEntry]:
    """The offline reader's statements of `text` (the user's own, redacted words), applied."""
    return statements_apply(profile_statements(text), source)


def _message_source(message: Message) -> StatementSource:
    session = message.session
    return StatementSource(
        user_id=session.user_id,
        app_id=session.app_id,
        origin=ProfileEntry.Origin.CHAT,
        stated_at=message.created_at,
        message_id=message.id,
        message_ids=(message.id,),
    )


def _learns_from(message: Message) -> bool:
    return (
        message.role == Message.Role.USER
        and bool(message.content_sanitized.strip())
        and not (message.session.metadata or {}).get("app_tasks")
    )


def profile_message_learn(*, message: Message) -> list[ProfileEntry]:
    """After-message hook: the statements a user's message makes, applied in the request.

    The rules read every message here (one regex scan when it states nothing), so the first
    pack of the next chat carries what was said. With a model configured the model also
    reads it, in a background task after the commit (`profile_message_read`), and adds what
    the rules missed or changes what they read. Messages of a chat app's own tasks (titles,
    tags) state nothing about the user.
    """
    if not settings.MNEMO_PROFILE_ENABLED or not _learns_from(message):
        return []
    entries = profile_learn(text=message.content_sanitized, source=_message_source(message))
    if settings.MNEMO_PROFILE_MODEL and not get_llm().is_local:
        transaction.on_commit(
            lambda: async_task(
                PROFILE_MESSAGE_READ_TASK, message.id, task_name=f"profile-{message.id}"
            )
        )
    return entries


def profile_message_read(*, message: Message, llm: LLM | None = None) -> list[ProfileEntry]:
    """The model's statements of one user message, applied (the rules already read it: a
    failed call changes nothing)."""
    llm = llm or get_llm()
    if llm.is_local or not _learns_from(message):
        return []
    source = _message_source(message)
    active = _active(source.user_id, source.app_id)
    current = "\n".join(f"{entry.id} [{entry.kind}] {entry.text}" for entry in active) or "(none)"
    prompt = [
        {"role": "system", "content": PROFILE_PROMPT},
        {
            "role": "user",
            "content": f"Current entries:\n{current}\n\nThe user's message:\n"
            f"{message.content_sanitized[:8000]}",
        },
    ]
    try:
        result = llm.chat_json(prompt, schema=PROFILE_SCHEMA, schema_name=PROFILE_SCHEMA_NAME)
    except ProviderError as exc:
        logger.warning("profile: the model failed on message %s (%s)", message.id, exc)
        return []
    usage_record_json(
        user=message.session.user, result=result, kind="profile", session=message.session
    )
    return _model_statements_apply(result.data, source)


def _model_statements_apply(data: dict, source: StatementSource) -> list[ProfileEntry]:
    entries = data.get("statements") if isinstance(data, dict) else None
    statements: list[tuple[ProfileStatement, list[int]]] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            continue
        kind = entry.get("kind")
        if kind not in {*ProfileEntry.Kind.values, WITHDRAWAL}:
            continue
        text = " ".join(entry["text"].split())[:MAX_ENTRY_CHARS]
        slot = entry.get("slot") if isinstance(entry.get("slot"), str) else ""
        ids = [i for i in entry.get("replaces") or [] if isinstance(i, int)]
        statement = ProfileStatement(
            kind=kind,
            text=text,
            slot=slot.strip().lower()[:128] or (statement_slot(text) if kind != FACT else ""),
            terms=() if kind == FACT else statement_terms(text),
        )
        statements.append((statement, ids))
    created: list[ProfileEntry | None] = []
    with transaction.atomic():
        _lock(source.user_id, source.app_id)
        active = _active(source.user_id, source.app_id)
        for statement, ids in statements[:MAX_MODEL_STATEMENTS]:
            created.append(_statement_apply(statement, source, active, replaced_ids=ids or None))
    return [entry for entry in created if entry is not None]


# ------------------------------------------------------------------------------------------
# The user's own edits
# ------------------------------------------------------------------------------------------


def _user_statement(kind: str, text: str) -> ProfileStatement:
    text = " ".join(text.split())
    if kind == FACT:
        label = text.split(":", 1)[0].strip().lower() if ":" in text else ""
        return ProfileStatement(kind=kind, text=text, slot=label[:128])
    return ProfileStatement(
        kind=kind, text=text, slot=statement_slot(text), terms=statement_terms(text)
    )


def profile_entry_add(*, user, app_id: str, kind: str, text: str) -> ProfileEntry:
    """An entry the user adds; like a statement in a chat, it replaces what it changes."""
    source = StatementSource(
        user_id=user.id, app_id=app_id, origin=ProfileEntry.Origin.USER, stated_at=timezone.now()
    )
    with transaction.atomic():
        _lock(user.id, app_id)
        active = _active(user.id, app_id)
        statement = _user_statement(kind, text)
        entry = _statement_apply(statement, source, active)
        if entry is None:  # the same text is already there
            entry = next(
                e
                for e in active
                if e.kind == kind and e.text.lower() == redact(statement.text).lower()
            )
    return entry


def profile_entry_update(*, user, entry_id: int, text: str) -> ProfileEntry:
    """A new version of an active entry; the old one stays as its history."""
    with transaction.atomic():
        entry = profile_entry_get_for_user(user=user, entry_id=entry_id)
        _lock(user.id, entry.app_id)
        entry = ProfileEntry.objects.select_for_update().get(id=entry.id)
        if entry.status != ProfileEntry.Status.ACTIVE:
            raise NotFound(
                f"No current profile entry {entry_id}: it was replaced.",
                code="profile_entry_not_found",
                field="entry_id",
            )
        statement = _user_statement(entry.kind, text)
        new = ProfileEntry.objects.create(
            user_id=user.id,
            app_id=entry.app_id,
            kind=entry.kind,
            origin=ProfileEntry.Origin.USER,
            text=redact(statement.text)[:MAX_ENTRY_CHARS],
            slot=statement.slot or entry.slot,
            terms=list(statement.terms),
            source_message_id=entry.source_message_id,
            source_memory_id=entry.source_memory_id,
            source_message_ids=entry.source_message_ids,
            stated_at=timezone.now(),
        )
        _supersede([entry], by=new, status=ProfileEntry.Status.SUPERSEDED)
    return new


def profile_entry_delete(*, user, entry_id: int) -> int:
    """Delete an entry and the history it replaced, for real; returns how many rows went."""
    with transaction.atomic():
        entry = profile_entry_get_for_user(user=user, entry_id=entry_id)
        _lock(user.id, entry.app_id)
        chain = [version.id for version in profile_entry_history(entry=entry)]
        deleted, _ = ProfileEntry.objects.filter(id__in=chain, user=user).delete()
    return deleted


def profile_patch(
    *, user, app_id: str, add: list[dict], update: list[dict], delete: list[int]
) -> None:
    """Several edits in one transaction: all of them or none (an unknown id is a 404)."""
    with transaction.atomic():
        for entry_id in delete:
            profile_entry_delete(user=user, entry_id=entry_id)
        for change in update:
            profile_entry_update(user=user, entry_id=change["id"], text=change["text"])
        for new in add:
            profile_entry_add(user=user, app_id=app_id, kind=new["kind"], text=new["text"])


# ------------------------------------------------------------------------------------------
# Imports and commits (background tasks)
# ------------------------------------------------------------------------------------------


def _imported_exchanges():
    """An import's exchange chunks, whose embedding text is the user's side of the exchange.
    Left out: the passages of long messages (`granularity` "passage"). They are chunks of the
    import too, but each holds one side's own words: read as the user's, an assistant's advice
    ("Remember to always back up…") would become a standing instruction."""
    return MemoryItem.objects.filter(source=MemoryItem.Source.CHUNK).exclude(
        metadata__contains={"granularity": PASSAGE_GRANULARITY}
    )


def _user_turns(item: dict) -> str:
    """The user's side of an imported chunk: its embedding text is its header + user turns."""
    text = item["embedding_text"] or ""
    header = item["header"] or ""
    if header and text.startswith(header):
        text = text[len(header) :]
    return text.strip()


def profile_import_read(*, import_file_id: int) -> int:
    """The statements of an imported file's user turns, oldest first; returns entries made.

    Offline rules only (a model call per imported turn is too many). Each statement is dated
    when it was said, so an old export never replaces what the user said since.
    """
    if not settings.MNEMO_PROFILE_ENABLED:
        return 0
    import_file = ImportFile.objects.filter(id=import_file_id).select_related("job").first()
    if import_file is None or not import_file.chunk_ids:
        return 0
    items = (
        _imported_exchanges()
        .filter(chunk_id__in=import_file.chunk_ids)
        .order_by("occurred_at", "id")
        .values("id", "user_id", "app_id", "header", "embedding_text", "occurred_at")
    )
    made = 0
    for item in items.iterator(chunk_size=500):
        statements = profile_statements(_user_turns(item))
        if statements:
            made += len(
                statements_apply(
                    statements,
                    StatementSource(
                        user_id=item["user_id"],
                        app_id=item["app_id"],
                        origin=ProfileEntry.Origin.IMPORT,
                        stated_at=item["occurred_at"],
                        memory_id=item["id"],
                    ),
                )
            )
    return made


def profile_memories_read(*, memory_ids: list[int], origin: str) -> int:
    """The statements of stored memories (a commit's facts), applied; returns entries made."""
    if not settings.MNEMO_PROFILE_ENABLED:
        return 0
    made = 0
    items = MemoryItem.objects.filter(id__in=memory_ids).order_by("occurred_at", "id")
    for item in items.values(
        "id", "user_id", "app_id", "content", "occurred_at", "source_message_ids"
    ):
        made += len(
            profile_learn(
                text=item["content"],
                source=StatementSource(
                    user_id=item["user_id"],
                    app_id=item["app_id"],
                    origin=origin,
                    stated_at=item["occurred_at"],
                    memory_id=item["id"],
                    message_ids=tuple(item["source_message_ids"] or ()),
                ),
            )
        )
    return made


def profile_rebuild(*, user, app_id: str) -> int:
    """Read the profile again from everything the user said, oldest first: every user
    message of their chats and every imported file's user turns. Entries the user added or
    edited stay; learned ones are replaced. For rows written before the profile existed
    (`manage.py profile_rebuild`); returns the entries made."""
    learned = [ProfileEntry.Origin.CHAT, ProfileEntry.Origin.IMPORT, ProfileEntry.Origin.COMMIT]
    said: list[tuple] = []
    messages = (
        Message.objects.filter(
            session__in=chat_sessions(user=user).filter(app_id=app_id),
            role=Message.Role.USER,
        )
        .only("id", "content_sanitized", "created_at")
        .order_by("created_at", "id")
    )
    for message in messages.iterator(chunk_size=1000):
        source = StatementSource(
            user_id=user.id,
            app_id=app_id,
            origin=ProfileEntry.Origin.CHAT,
            stated_at=message.created_at,
            message_id=message.id,
            message_ids=(message.id,),
        )
        said.append((message.created_at, message.content_sanitized, source))
    chunks = (
        _imported_exchanges()
        .filter(user=user, app_id=app_id, chat_session__isnull=True)
        .exclude(metadata__import_file_id=None)
        .values("id", "header", "embedding_text", "occurred_at")
    )
    for item in chunks.iterator(chunk_size=1000):
        source = StatementSource(
            user_id=user.id,
            app_id=app_id,
            origin=ProfileEntry.Origin.IMPORT,
            stated_at=item["occurred_at"],
            memory_id=item["id"],
        )
        said.append((item["occurred_at"], _user_turns(item), source))
    said.sort(key=lambda row: row[0])
    with transaction.atomic():
        _lock(user.id, app_id)
        ProfileEntry.objects.filter(user=user, app_id=app_id, origin__in=learned).delete()
    made = 0
    for _, text, source in said:
        made += len(profile_learn(text=text, source=source))
    return made
