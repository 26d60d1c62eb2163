"""Export and erasure of everything a user owns (GDPR-style access and deletion).

Ownership is discovered, not listed: a row belongs to a user when a foreign key to the user model
with `on_delete=CASCADE` points at them (the row dies with the user), or when it cascades from
such a row (a row of a model that has no user column but hangs off a user's session or memory).
Models added later by any app are therefore exported and erased without changes here. A foreign
key with SET_NULL (say `created_by` on a row that belongs to someone else) is a reference, not
ownership: the row is neither exported nor deleted, and erasure clears the reference.

This module sits on the top floor, so it may read every app's models.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.models import Session
from django.db import models, transaction
from django.db.models import ProtectedError, Q, RestrictedError
from django.db.models.fields.files import FieldFile
from django.utils import timezone
from pgvector.django import BitField, HalfVectorField, SparseVectorField, VectorField

from ingestion_app.models import MemoryItem
from memory_site import task_paths
from memory_site.crypto import EncryptedTextField
from memory_site.errors import Conflict, InvalidInput
from memory_site.task_records import (
    TaskReferences,
    task_queue_forget,
    task_queue_restore,
    task_records_forget,
)
from sessions_app.models import ChatSession, RetentionLog

logger = logging.getLogger(__name__)

EXPORT_FORMAT = "mnemo.export"
EXPORT_VERSION = 1
ERASE_BATCH_SIZE = 1000
# Cascade chains deeper than this (user -> session -> message -> ...) are covered by the database
# cascade on erasure but not listed separately in the export.
MAX_OWNERSHIP_DEPTH = 4

# Export section names for the models we know; any other owned model is exported under its
# label ("app_label.modelname"), so nothing is left out when apps add models.
SECTIONS = {
    "sessions_app.ChatSession": "sessions",
    "sessions_app.Message": "messages",
    "context_app.SessionSummary": "summaries",
    "context_app.SessionTag": "tags",
    "sessions_app.UsageLog": "usage",
    "ingestion_app.MemoryItem": "memories",  # split into memories / chunks, see _section_for
    "ingestion_app.FactHistory": "memory_history",
    "ingestion_app.MemoryCommitLog": "memory_commits",
    "ingestion_app.ProjectContext": "project_contexts",
    "imports_app.ImportJob": "imports",
    "imports_app.ImportFile": "import_files",
    "imports_app.ImportedConversation": "imported_conversations",
    "ingestion_app.Document": "documents",
    "ingestion_app.DocumentIngestJob": "document_ingest_jobs",
    "entities_app.Entity": "entities",
    "entities_app.EntityMention": "entity_mentions",
    "entities_app.CrossReference": "cross_references",
    "profile_app.ProfileEntry": "profile",
    "webhooks_app.WebhookEndpoint": "webhooks",
    "webhooks_app.WebhookDelivery": "webhook_deliveries",
    "webhooks_app.WebhookAttempt": "webhook_attempts",
    "context_app.TopicSummary": "topics",
    "context_app.TopicOverride": "topic_overrides",
    "context_app.OptOut": "opt_out",
    "context_app.InjectionLog": "injection_logs",
    "context_app.UserChatSummary": "chat_summaries",
    "context_app.SessionConsolidation": "consolidations",
    "authtoken.Token": "api_tokens",
    "admin.LogEntry": "admin_log",
    "auth.User_groups": "groups",
    "auth.User_user_permissions": "permissions",
}
CHUNK_SOURCES = {MemoryItem.Source.CHUNK, MemoryItem.Source.DOCUMENT}
# Rows of these models are also nested under their parent row (fact history under its memory).
NESTED = {"ingestion_app.FactHistory": ("ingestion_app.MemoryItem", "memory_id", "history")}
# Credentials are never exported; derived columns (vectors, full-text index) are left out.
SECRET_FIELDS = {"authtoken.Token": {"key"}, "webhooks_app.WebhookEndpoint": {"secret"}}
USER_SECRET_FIELDS = {"password"}
DERIVED_FIELD_TYPES = (VectorField, HalfVectorField, SparseVectorField, BitField)
# Columns with these in their name may hold a path to uploaded bytes (see user_upload_paths).
PATH_COLUMN_HINTS = ("path", "dir")


@dataclass(frozen=True)
class OwnedModel:
    """A model whose rows can belong to a user, and the ORM paths from a row to its owner."""

    model: type[models.Model]
    paths: tuple[str, ...]
    direct: bool

    @property
    def label(self) -> str:
        return self.model._meta.label

    def rows_of(self, user_pk) -> models.QuerySet:
        owner = Q()
        for path in self.paths:
            owner |= Q(**{path: user_pk})
        return self.model._base_manager.filter(owner)


@dataclass
class ErasureReport:
    user_id: int
    username: str
    # Rows removed per model label, cascades included; the user row is counted too.
    deleted: dict[str, int] = field(default_factory=dict)
    files_deleted: int = 0

    @property
    def rows_deleted(self) -> int:
        return sum(self.deleted.values())


def _foreign_keys(model: type[models.Model]) -> list[models.Field]:
    return [
        f
        for f in model._meta.concrete_fields
        if f.is_relation and (f.many_to_one or f.one_to_one) and f.related_model is not None
    ]


def _cascades(fk: models.Field) -> bool:
    return fk.remote_field.on_delete is models.CASCADE


def user_owned_models() -> list[OwnedModel]:
    """Every model holding rows that belong to a user, in app-registry order.

    Direct owners have a CASCADE foreign key to the user model; indirect ones cascade from a
    direct owner (up to MAX_OWNERSHIP_DEPTH links), e.g. a many-to-many table of memories.
    """
    user_model = get_user_model()
    candidates = [
        m
        for m in apps.get_models(include_auto_created=True)
        if not m._meta.proxy and m is not user_model
    ]
    paths: dict[type[models.Model], list[str]] = {}
    direct: set[type[models.Model]] = set()
    for model in candidates:
        for fk in _foreign_keys(model):
            if fk.related_model is user_model and _cascades(fk):
                paths.setdefault(model, []).append(fk.name)
                direct.add(model)
    for _ in range(MAX_OWNERSHIP_DEPTH):
        found = {}
        for model in candidates:
            if model in paths:
                continue
            via = [
                f"{fk.name}__{path}"
                for fk in _foreign_keys(model)
                if fk.related_model in paths and _cascades(fk) and fk.related_model is not model
                for path in paths[fk.related_model]
            ]
            if via:
                found[model] = via
        if not found:
            break
        paths.update(found)
    return [OwnedModel(m, tuple(p), m in direct) for m, p in paths.items()]


def user_data_counts(*, user) -> dict[str, int]:
    """Rows the user owns per model label (non-zero only), plus uploaded files: what erasure takes."""
    counts = {entry.label: entry.rows_of(user.pk).count() for entry in user_owned_models()}
    counts = {label: count for label, count in counts.items() if count}
    files = len(_files_under(user_upload_paths(user=user)))
    if files:
        counts["files"] = files
    return counts


def user_upload_dir(*, user) -> Path:
    return Path(settings.MNEMO_UPLOAD_DIR) / str(user.pk)


def _inside(path: Path, root: Path) -> bool:
    return path != root and root in path.parents


def user_upload_paths(*, user, owned: list[OwnedModel] | None = None) -> list[Path]:
    """Existing paths inside MNEMO_UPLOAD_DIR holding the user's bytes.

    The user's folder (MNEMO_UPLOAD_DIR/<user id>/) plus any path stored in a column named like
    a path (`*path*`, `*dir*`) of one of their rows, e.g. an import job's upload folder. Paths
    outside MNEMO_UPLOAD_DIR (a CLI import reading the user's own file) are never touched.
    """
    root = Path(settings.MNEMO_UPLOAD_DIR).resolve()
    found = {user_upload_dir(user=user).resolve()}
    for entry in owned if owned is not None else user_owned_models():
        columns = [
            f.name
            for f in entry.model._meta.concrete_fields
            if isinstance(f, (models.CharField, models.TextField))
            and not isinstance(f, EncryptedTextField)
            and not f.choices
            and any(hint in f.name for hint in PATH_COLUMN_HINTS)
        ]
        for column in columns:
            values = entry.rows_of(user.pk).exclude(**{column: ""}).values_list(column, flat=True)
            for value in values.iterator():
                if value and Path(value).is_absolute():
                    found.add(Path(value).resolve())
    return sorted(p for p in found if _inside(p, root) and p.exists())


def _files_under(paths: list[Path]) -> list[Path]:
    files = set()
    for path in paths:
        if path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            files.add(path)
    return sorted(files)


# --- export -------------------------------------------------------------------------------------


def _jsonable(value):
    """Plain JSON types for any stored value (dates as ISO 8601, decimals as strings)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, FieldFile):
        return value.name or None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _exported_fields(model: type[models.Model], secret: set[str]) -> tuple[list, list[str]]:
    """(fields to export, names left out) for a model."""
    kept, omitted = [], []
    for f in model._meta.concrete_fields:
        if f.name in secret or isinstance(f, DERIVED_FIELD_TYPES) or getattr(f, "generated", False):
            omitted.append(f.name)
        else:
            kept.append(f)
    return kept, omitted


def _row(obj: models.Model, fields: list) -> dict:
    # value_from_object reads the attribute: foreign keys give their id, encrypted fields the
    # decrypted original (the user's own text, which is the point of an export).
    return {f.attname: _jsonable(f.value_from_object(obj)) for f in fields}


def _section_for(label: str, row: dict) -> str:
    if label == MemoryItem._meta.label:
        return "chunks" if row.get("source") in CHUNK_SOURCES else "memories"
    return SECTIONS.get(label, label.lower())


def user_export(*, user) -> dict:
    """Everything the user owns as one JSON-ready document.

    Sections: `user`, then one list per owned model (`sessions`, `messages` with the decrypted
    original and the sanitized copy, `summaries`, `tags`, `memories` (facts and summaries, each
    with its `history`), `chunks` (turn-pair and document chunks), `topics`, ..., and any model
    added later under its label), `files` (uploads kept on disk), and `export` with the row
    count per model and the fields deliberately left out (credentials, vectors, search index).
    Reads only; consistent per model, not across models (no long-running snapshot).
    """
    user_model = get_user_model()
    user_fields, user_omitted = _exported_fields(user_model, USER_SECRET_FIELDS)
    document: dict = {"user": _row(user, user_fields)}
    counts: dict[str, int] = {}
    omitted: dict[str, list[str]] = {user_model._meta.label: user_omitted}
    by_label: dict[str, dict[str, dict]] = {}
    for owned in user_owned_models():
        fields, left_out = _exported_fields(owned.model, SECRET_FIELDS.get(owned.label, set()))
        if left_out:
            omitted[owned.label] = left_out
        rows = owned.rows_of(user.pk).order_by("pk").only(*[f.name for f in fields])
        counts[owned.label] = 0
        for obj in rows.iterator(chunk_size=1000):
            row = _row(obj, fields)
            counts[owned.label] += 1
            document.setdefault(_section_for(owned.label, row), []).append(row)
            by_label.setdefault(owned.label, {})[str(obj.pk)] = row
    for child_label, (parent_label, parent_key, nested_key) in NESTED.items():
        parents = by_label.get(parent_label, {})
        for parent in parents.values():
            parent.setdefault(nested_key, [])
        for child in by_label.get(child_label, {}).values():
            parent = parents.get(str(child.get(parent_key)))
            if parent is not None:
                parent[nested_key].append(child)
    for section in (
        "sessions",
        "messages",
        "summaries",
        "tags",
        "memories",
        "chunks",
        "profile",
        "topics",
        "imports",
    ):
        document.setdefault(section, [])
    root = Path(settings.MNEMO_UPLOAD_DIR).resolve()
    document["files"] = [
        {"path": str(p.relative_to(root)), "bytes": p.stat().st_size}
        for p in _files_under(user_upload_paths(user=user))
    ]
    document["export"] = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": timezone.now().isoformat(),
        "counts": counts,
        "omitted_fields": omitted,
    }
    return document


# --- erasure ------------------------------------------------------------------------------------


def erasure_check_confirmation(*, user, confirm) -> None:
    """The caller must type their username: erasure cannot be undone.

    Raises InvalidInput (field `confirm`): `confirmation_required` when missing,
    `confirmation_mismatch` when it is not the username.
    """
    if confirm in (None, ""):
        raise InvalidInput(
            "Erasing all data cannot be undone: send your username in `confirm`.",
            code="confirmation_required",
            field="confirm",
        )
    if not isinstance(confirm, str) or confirm != user.get_username():
        raise InvalidInput(
            "`confirm` does not match your username; nothing was erased.",
            code="confirmation_mismatch",
            field="confirm",
        )


def _file_field_names(owned: list[OwnedModel], user) -> list[tuple]:
    """(storage, name) of every file referenced by a FileField of the user's rows."""
    files = []
    for entry in owned:
        file_fields = [
            f for f in entry.model._meta.concrete_fields if isinstance(f, models.FileField)
        ]
        for file_field in file_fields:
            names = (
                entry.rows_of(user.pk)
                .exclude(**{file_field.name: ""})
                .values_list(file_field.name, flat=True)
            )
            files.extend((file_field.storage, name) for name in names if name)
    return files


def _remove_files(*, paths: list[Path], stored: list[tuple]) -> None:
    for storage, name in stored:
        try:
            storage.delete(name)
        except OSError:
            logger.exception("erasure: could not delete stored file %s", name)
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _forget_admin_log(model: type[models.Model], pks: list) -> int:
    """Admin history entries about these rows (their repr may quote the user's text)."""
    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    entries = LogEntry.objects.filter(
        content_type=content_type, object_id__in=[str(pk) for pk in pks]
    )
    return entries.delete()[0]


def _forget_web_sessions(user_pk) -> int:
    """Logged-in browser sessions of the user (database session backend)."""
    if settings.SESSION_ENGINE != "django.contrib.sessions.backends.db":
        return 0
    doomed = [
        s.pk
        for s in Session.objects.iterator(chunk_size=1000)
        if str(s.get_decoded().get("_auth_user_id")) == str(user_pk)
    ]
    return Session.objects.filter(pk__in=doomed).delete()[0]


def _forget_retention_log(session_ids: set[str]) -> None:
    """Retention logs keep purged session ids; the erased user's ids leave them too."""
    if not session_ids:
        return
    for log in RetentionLog.objects.exclude(session_ids=[]).iterator():
        kept = [sid for sid in log.session_ids if sid not in session_ids]
        if len(kept) != len(log.session_ids):
            RetentionLog.objects.filter(id=log.id).update(session_ids=kept)


# Task functions whose first argument is an integer id of the user's: the user's own id, or
# one of their memory items.
TASK_USER_ARGUMENT = (task_paths.USER_ROLLUPS_REBUILD_TASK,)
TASK_MEMORY_ARGUMENT = (task_paths.BACKFILL_TASK,)
# Usernames this long are unambiguous enough to look for inside task rows.
TASK_USERNAME_MIN_LENGTH = 8


def user_task_references(*, user, owned: list[OwnedModel]) -> TaskReferences:
    """What names the user in django-q's task rows: the UUID of every row they own (sessions,
    import jobs, documents), their user id and memory ids as task arguments, a long username."""
    strings = set()
    for entry in owned:
        if isinstance(entry.model._meta.pk, models.UUIDField):
            pks = entry.rows_of(user.pk).values_list("pk", flat=True)
            strings.update(str(pk) for pk in pks.iterator(chunk_size=2000))
    if len(user.get_username()) >= TASK_USERNAME_MIN_LENGTH:
        strings.add(user.get_username())

    def is_memory(item_id: int) -> bool:
        return MemoryItem.objects.filter(user_id=user.pk, pk=item_id).exists()

    integers = dict.fromkeys(TASK_USER_ARGUMENT, lambda value: value == user.pk)
    integers.update(dict.fromkeys(TASK_MEMORY_ARGUMENT, is_memory))
    return TaskReferences(strings=strings, integers=integers)


def user_erase(*, user) -> ErasureReport:
    """Delete the user and every row they own, their uploads and their login sessions.

    One transaction: either everything goes or nothing does. Rows go batch by batch through
    Django's collector, so cascades (and SET_NULL on references from other users' rows) apply;
    vectors live in rag_store rows and go with them. Admin history entries about the user's
    rows, web sessions and the user's session ids in retention logs are removed as well. Files
    under MNEMO_UPLOAD_DIR that hold the user's bytes (see `user_upload_paths`) and files of
    FileFields are removed after commit. Queued, finished and scheduled background tasks that
    name the user (see `user_task_references`) are deleted first, in the same transaction; with
    REDIS_URL the queued ones are removed from the Redis list then, and put back if the erasure
    fails.
    Raises Conflict when another row protects one of the user's rows (on_delete=PROTECT).
    """
    user_model = get_user_model()
    report = ErasureReport(user_id=user.pk, username=user.get_username())
    owned = user_owned_models()
    upload_paths = user_upload_paths(user=user, owned=owned)
    stored_files = _file_field_names(owned, user)
    report.files_deleted = len(_files_under(upload_paths)) + len(stored_files)
    session_ids = {
        str(sid) for sid in ChatSession.objects.filter(user=user).values_list("id", flat=True)
    }
    deleted: Counter[str] = Counter()
    unqueued: list[bytes] = []
    try:
        with transaction.atomic():
            references = user_task_references(user=user, owned=owned)
            deleted.update(task_records_forget(references=references))
            unqueued = task_queue_forget(references=references)
            if unqueued:
                deleted["django_q.RedisQueue"] += len(unqueued)
            for entry in owned:
                if not entry.direct:
                    continue  # cascades from a direct owner
                while True:
                    pks = list(
                        entry.rows_of(user.pk)
                        .order_by()
                        .values_list("pk", flat=True)[:ERASE_BATCH_SIZE]
                    )
                    if not pks:
                        break
                    _forget_admin_log(entry.model, pks)
                    deleted.update(entry.model._base_manager.filter(pk__in=pks).delete()[1])
            _forget_admin_log(user_model, [user.pk])
            _forget_retention_log(session_ids)
            web_sessions = _forget_web_sessions(user.pk)
            if web_sessions:
                deleted["sessions.Session"] += web_sessions
            deleted.update(user_model._base_manager.filter(pk=user.pk).delete()[1])
            transaction.on_commit(partial(_remove_files, paths=upload_paths, stored=stored_files))
    except BaseException as exc:
        task_queue_restore(entries=unqueued)  # the erasure did not happen: its tasks stay due
        if not isinstance(exc, (ProtectedError, RestrictedError)):
            raise
        raise Conflict(
            f"Cannot erase: other data depends on this user's rows ({exc.args[0]})",
            code="erasure_blocked",
        ) from exc
    report.deleted = {label: count for label, count in sorted(deleted.items()) if count}
    logger.info(
        "erased user %s: %s rows, %s files",
        report.user_id,
        report.rows_deleted,
        report.files_deleted,
    )
    return report
