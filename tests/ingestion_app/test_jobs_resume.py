"""The one-minute resume schedule: ingests and session closes whose worker died are queued
again once their lease (or lock) is gone, finish once, and live ones are left alone."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from context_app.models import SessionSummary
from ingestion_app.models import Document, DocumentIngestJob, MemoryItem
from ingestion_app.tasks import jobs_resume_abandoned_task
from memory_site.db_locks import advisory_lock_key
from sessions_app.models import ChatSession
from tests.factories import add_message, open_session

pytestmark = pytest.mark.django_db

TEXT = (
    "Compost basics. Mix greens and browns in equal volume and keep the pile damp.\n\n"
    "Turning. Turn the pile every week so the middle gets air and heats up again."
)
TRIP = [
    ("user", "I am planning a trip to Japan in April, mostly Tokyo and Kyoto."),
    ("assistant", "April is cherry blossom season, so book hotels in Kyoto early."),
    ("user", "My budget for Kyoto hotels is about 150 dollars a night."),
    ("assistant", "That budget works for a good ryokan in Kyoto outside the peak week."),
]


def _queued_ingest(api) -> str:
    response = api.post("/api/v1/knowledge/ingest", {"text": TEXT}, format="json")
    assert response.status_code == 202
    return response.json()["job_id"]


def test_an_abandoned_ingest_is_resumed_once_and_a_live_one_left_alone(
    api, user, fake_embedder, upload_dir, settings, django_capture_on_commit_callbacks
):
    dead = _queued_ingest(api)
    expired = timezone.now() - timedelta(seconds=settings.MNEMO_JOB_LEASE_SECONDS + 1)
    DocumentIngestJob.objects.filter(id=dead).update(
        status="running", heartbeat_at=expired, attempts=1
    )

    with django_capture_on_commit_callbacks(execute=True):
        outcome = jobs_resume_abandoned_task()

    assert outcome["ingests"] == 1
    job = DocumentIngestJob.objects.get(id=dead)
    assert job.status == "done" and job.attempts == 2
    assert Document.objects.filter(user=user).count() == 1
    assert MemoryItem.objects.filter(user=user, source="document").count() == job.chunks_total


def test_a_running_ingest_with_a_live_lease_is_not_taken_over(api, user, upload_dir):
    job_id = _queued_ingest(api)
    DocumentIngestJob.objects.filter(id=job_id).update(
        status="running", heartbeat_at=timezone.now(), attempts=1
    )

    assert jobs_resume_abandoned_task()["ingests"] == 0
    assert DocumentIngestJob.objects.get(id=job_id).attempts == 1


def _stranded_closing_session(user) -> ChatSession:
    """A session a killed worker was closing: `closing`, nothing written, no error."""
    session = open_session(user)
    for role, content in TRIP:
        add_message(session, role, content)
    ChatSession.objects.filter(id=session.id).update(status="closing", close_attempts=1)
    return session


def test_a_close_cut_off_by_a_dead_worker_is_resumed_once(
    user, fake_embedder, django_capture_on_commit_callbacks
):
    session = _stranded_closing_session(user)

    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_resume_abandoned_task()["closes"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_resume_abandoned_task()["closes"] == 0  # closed: nothing left to resume

    session.refresh_from_db()
    assert session.status == "closed"
    assert SessionSummary.objects.filter(session=session).count() == 1


def test_a_close_still_held_by_a_live_worker_is_not_queued(user):
    session = _stranded_closing_session(user)
    held, release = threading.Event(), threading.Event()

    def live_worker():  # another connection holds the session's close lock
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_lock(%s)", [advisory_lock_key(f"session-close:{session.id}")]
            )
            held.set()
            release.wait(30)
        connection.close()  # the lock goes with the connection

    worker = threading.Thread(target=live_worker)
    worker.start()
    try:
        assert held.wait(30)
        assert jobs_resume_abandoned_task()["closes"] == 0
    finally:
        release.set()
        worker.join(30)
    assert ChatSession.objects.get(id=session.id).status == "closing"
