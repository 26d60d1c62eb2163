"""Reads behind the staff pages, composed from the apps' own selectors.

Every function takes the user whose data is shown; the views decide (privacy_app.selectors)
whether the caller may see that user's data. The `*_for_viewer` lookups answer Http404 for another
user's object unless the viewer holds the browse permission.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, time

from django.contrib.auth import get_user_model
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Substr
from django.http import Http404
from django.utils import timezone

from entities_app.models import Entity
from imports_app.models import ImportFile, ImportJob
from imports_app.services.jobs import import_job_get_for_user
from ingestion_app.models import Document, MemoryItem
from ingestion_app.selectors import (
    countable_memories,
    memories_for_user,
    memory_count_by_session,
    memory_count_by_source,
    memory_get_for_user,
    memory_topics_most_used,
)
from memory_site.errors import NotFound
from memory_site.providers import ProviderError, get_embedder
from privacy_app.selectors import can_browse_all
from retrieval.search import SOURCES, SearchFilters, SearchHit, memory_search
from sessions_app.models import ChatSession, Message
from sessions_app.selectors import chat_sessions, session_get_for_user

logger = logging.getLogger(__name__)

SEARCH_TOP_K = 50
SIDEBAR_SESSIONS = 50
CHAT_HISTORY_MESSAGES = 20


@dataclass
class MemoryFilters:
    """The memory browser's filters, already validated by the search form."""

    sources: list[str] = field(default_factory=list)
    project_id: str = ""
    app_id: str = ""
    topic: str = ""
    since: date | None = None
    until: date | None = None

    @property
    def since_at(self) -> datetime | None:
        if self.since is None:
            return None
        return timezone.make_aware(datetime.combine(self.since, time.min))

    @property
    def until_at(self) -> datetime | None:
        if self.until is None:
            return None
        return timezone.make_aware(datetime.combine(self.until, time.max))


@dataclass
class SearchPage:
    hits: list[SearchHit]
    mode: str
    notice: str = ""


def memories_browse(*, user, filters: MemoryFilters) -> QuerySet[MemoryItem]:
    """The user's memories matching the filters, newest first (the browser without a query)."""
    queryset = memories_for_user(
        user=user, project_id=filters.project_id or None, app_id=filters.app_id or None
    )
    if filters.sources and set(filters.sources) != set(SOURCES):
        queryset = queryset.filter(source__in=filters.sources)
    if filters.topic:
        queryset = queryset.filter(topics__contains=[filters.topic])
    if filters.since_at:
        queryset = queryset.filter(occurred_at__gte=filters.since_at)
    if filters.until_at:
        queryset = queryset.filter(occurred_at__lte=filters.until_at)
    return queryset


def memories_search(*, user, query: str, filters: MemoryFilters) -> SearchPage:
    """Hybrid search (vector + keywords) over the user's memories, best first.

    One ranking per app and per source, merged by fused score: the retrieval selector is
    scoped to one app, and it drops an item whose messages are covered by a better-ranked item
    (right for a prompt, where a chunk and a fact from the same message repeat each other),
    but the browser must show every kind of memory that matches. The query is embedded once.
    Falls back to keyword search, and says so, when the embedding model fails.
    """
    apps = [filters.app_id] if filters.app_id else (user_app_ids(user=user) or ["default"])
    search_filters = SearchFilters(
        project_id=filters.project_id or None,
        topics=[filters.topic] if filters.topic else [],
        since=filters.since_at,
        until=filters.until_at,
    )
    mode, notice, embedding = "hybrid", "", None
    try:
        embedding = get_embedder().embed([query])[0]
    except ProviderError as exc:
        logger.warning("memory browser: embedding failed, keyword search only (%s)", exc)
        mode = "keyword"
        notice = "The embedding model is unavailable, so these are keyword matches only."
    hits: list[SearchHit] = []
    for app_id in apps:
        for source in filters.sources or SOURCES:
            result = memory_search(
                user=user,
                query=query,
                app_id=app_id,
                top_k=SEARCH_TOP_K,
                max_tokens=None,
                sources=[source],
                mode=mode,
                filters=search_filters,
                query_embedding=embedding,
                gists=False,  # a page of results, not a prompt's budget: each shown whole
            )
            hits.extend(result.items)
    hits.sort(key=lambda hit: (-hit.score, -(hit.similarity or 0.0), -hit.id))
    return SearchPage(hits=hits[:SEARCH_TOP_K], mode=mode, notice=notice)


def user_app_ids(*, user) -> list[str]:
    return list(
        MemoryItem.objects.filter(user=user)
        .order_by("app_id")
        .values_list("app_id", flat=True)
        .distinct()
    )


def memory_filter_choices(*, user) -> dict[str, list[str]]:
    """Values offered by the filter inputs: the user's projects, apps and most used topics."""
    projects = list(
        MemoryItem.objects.filter(user=user)
        .exclude(project_id="")
        .order_by("project_id")
        .values_list("project_id", flat=True)
        .distinct()[:200]
    )
    return {
        "projects": projects,
        "apps": user_app_ids(user=user),
        "topics": memory_topics_most_used(user=user),
    }


def memory_for_viewer(*, viewer, memory_id: int) -> MemoryItem:
    """The viewer's memory, or (staff with the browse permission) anyone's; else Http404."""
    try:
        return memory_get_for_user(user=viewer, memory_id=memory_id)
    except NotFound:
        if can_browse_all(viewer):
            memory = MemoryItem.objects.filter(id=memory_id).select_related("user").first()
            if memory is not None:
                return memory
        raise Http404("No such memory.") from None


@dataclass
class MemoryProvenance:
    """Where a memory came from: a chat (session and messages), an import, or a document."""

    session: ChatSession | None = None
    messages: list[Message] = field(default_factory=list)
    missing_message_ids: list[int] = field(default_factory=list)
    import_job: ImportJob | None = None
    import_file: ImportFile | None = None
    frontmatter: dict = field(default_factory=dict)
    document: Document | None = None

    @property
    def kind(self) -> str:
        if self.import_job or self.import_file or self.frontmatter.get("source_platform"):
            return "import"
        if self.document or self.frontmatter.get("filename"):
            return "document"
        if self.session:
            return "chat"
        return "unknown"


FRONTMATTER_FIELDS = (
    "source_file",
    "source_platform",
    "conversation_title",
    "turn_range",
    "timestamp",
    "model_used",
    "chunk_id",
    "agent_id",
)


def memory_provenance(*, memory: MemoryItem) -> MemoryProvenance:
    """The memory's source, looked up within its owner's data only."""
    metadata = memory.metadata or {}
    provenance = MemoryProvenance()
    if memory.chat_session_id:
        provenance.session = ChatSession.objects.filter(
            id=memory.chat_session_id, user_id=memory.user_id
        ).first()
    if memory.source_message_ids:
        provenance.messages = list(
            Message.objects.filter(
                id__in=memory.source_message_ids, user_id=memory.user_id
            ).order_by("id")
        )
        found = {message.id for message in provenance.messages}
        provenance.missing_message_ids = [i for i in memory.source_message_ids if i not in found]
    job_id = metadata.get("import_job_id")
    if job_id:
        try:
            provenance.import_job = ImportJob.objects.filter(
                id=uuid.UUID(str(job_id)), user_id=memory.user_id
            ).first()
        except ValueError:
            provenance.import_job = None
    file_id = metadata.get("import_file_id")
    if isinstance(file_id, int):
        provenance.import_file = ImportFile.objects.filter(
            id=file_id, user_id=memory.user_id
        ).first()
    provenance.frontmatter = {
        name: metadata[name] for name in FRONTMATTER_FIELDS if metadata.get(name) not in (None, "")
    }
    if metadata.get("filename"):
        provenance.frontmatter["filename"] = metadata["filename"]
        if metadata.get("total_chunks"):
            provenance.frontmatter["part"] = (
                f"{int(metadata.get('chunk_index', 0)) + 1} of {metadata['total_chunks']}"
            )
    document_id = metadata.get("document_id")
    if document_id:
        try:
            provenance.document = Document.objects.filter(
                id=uuid.UUID(str(document_id)), user_id=memory.user_id
            ).first()
        except ValueError:
            provenance.document = None
    return provenance


def _first_user_message():
    return Subquery(
        Message.objects.filter(session=OuterRef("pk"), role=Message.Role.USER)
        .order_by("id")
        .annotate(excerpt=Substr("content_sanitized", 1, 120))
        .values("excerpt")[:1]
    )


def sessions_overview(*, user) -> QuerySet[ChatSession]:
    """The user's sessions, newest first, with summary, tags, message count and the start of
    the first user message (the label of an untitled chat)."""
    return (
        chat_sessions(user=user)
        .select_related("summary")
        .prefetch_related("tags")
        .annotate(message_count=Count("messages"), first_message=_first_user_message())
        .order_by("-opened_at")
    )


def chat_sidebar_sessions(*, user) -> list[ChatSession]:
    return list(
        chat_sessions(user=user)
        .annotate(first_message=_first_user_message())
        .order_by("-opened_at")[:SIDEBAR_SESSIONS]
    )


def chat_session_for_owner(*, user, session_id) -> ChatSession:
    """Only the owner chats in a session (staff browse it read-only elsewhere)."""
    try:
        return session_get_for_user(user=user, session_id=session_id)
    except NotFound:
        raise Http404("No such chat.") from None


def chat_history(*, session: ChatSession) -> list[Message]:
    """The session's user and assistant messages, oldest first."""
    return list(
        Message.objects.filter(
            session=session, role__in=[Message.Role.USER, Message.Role.ASSISTANT]
        ).order_by("id")
    )


def session_for_viewer(*, viewer, session_id) -> ChatSession:
    try:
        session = session_get_for_user(user=viewer, session_id=session_id)
    except NotFound:
        session = None
        if can_browse_all(viewer):
            session = ChatSession.objects.filter(id=session_id).first()
        if session is None:
            raise Http404("No such session.") from None
    return (
        ChatSession.objects.select_related("summary", "user")
        .prefetch_related("tags")
        .get(id=session.id)
    )


def session_memories(*, session: ChatSession) -> QuerySet[MemoryItem]:
    """The memories from one chat, as the browser and the stats count them."""
    return (
        countable_memories(user=session.user)
        .filter(chat_session=session)
        .order_by("source", "created_at", "id")
    )


@dataclass
class MemoryCounts:
    """The user's memories by source, for the browser's header line."""

    by_source: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_source.values())


def memory_counts(*, user) -> MemoryCounts:
    return MemoryCounts(by_source=memory_count_by_source(user=user))


def session_memory_counts(*, user, sessions) -> dict:
    """{session id: memories from that chat} for a page of sessions (absent: none)."""
    return memory_count_by_session(user=user, session_ids=[session.id for session in sessions])


def import_jobs_for_user(*, user) -> QuerySet[ImportJob]:
    return (
        ImportJob.objects.filter(user=user)
        .annotate(
            file_count=Count("files", filter=Q(files__is_archive=False)),
            files_done=Count(
                "files", filter=Q(files__is_archive=False) & ~Q(files__status="pending")
            ),
        )
        .order_by("-created_at")
    )


def import_job_for_viewer(*, viewer, import_id) -> ImportJob:
    try:
        return import_job_get_for_user(user=viewer, import_id=import_id)
    except NotFound:
        if can_browse_all(viewer):
            job = (
                ImportJob.objects.filter(id=import_id)
                .select_related("user")
                .prefetch_related(
                    Prefetch("files", queryset=ImportFile.objects.order_by("position", "id"))
                )
                .first()
            )
            if job is not None:
                return job
        raise Http404("No such import.") from None


def import_job_files(*, job: ImportJob) -> list[ImportFile]:
    """The job's files as a user thinks of them: archive members, not the archive container
    (unless the archive itself failed or was skipped)."""
    return [
        f
        for f in job.files.all()
        if not f.is_archive or f.status in (ImportFile.Status.FAILED, ImportFile.Status.SKIPPED)
    ]


def usernames(*, limit: int = 500) -> list[str]:
    """Active usernames, for the staff "view as" picker."""
    return list(
        get_user_model()
        .objects.filter(is_active=True)
        .order_by("username")
        .values_list("username", flat=True)[:limit]
    )


def import_job_progress(*, job: ImportJob, files: list[ImportFile]) -> tuple[int, bool]:
    """How many of the job's files are done (imported, skipped or failed), and whether the job
    is still queued or running."""
    done = sum(1 for f in files if f.status != ImportFile.Status.PENDING)
    return done, job.status in (ImportJob.Status.QUEUED, ImportJob.Status.RUNNING)


def entity_for_staff(*, entity_id: int):
    """Any user's entity by id with its user (browsing staff), or None."""
    return Entity.objects.filter(id=entity_id).select_related("user").first()
