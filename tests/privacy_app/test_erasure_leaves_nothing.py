"""After erasure no table (django-q's included, pickles decoded) and no file names the user."""

from __future__ import annotations

import uuid

import pytest
from django.apps import apps
from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import OrmQ, Schedule, Task
from django_q.tasks import async_task

from imports_app.models import ImportJob
from ingestion_app.models import MemoryItem
from memory_site import task_paths
from privacy_app.services.user_data import TASK_MEMORY_ARGUMENT, TASK_USER_ARGUMENT
from sessions_app.models import ChatSession
from tests.privacy_app.userdata import fill_every_owned_table, tables_mentioning

pytestmark = pytest.mark.django_db

CLOSE_TASK = task_paths.SESSION_CLOSE_TASK
IMPORT_TASK = task_paths.IMPORT_TASK
[ROLLUP_TASK] = TASK_USER_ARGUMENT
[BACKFILL_TASK] = TASK_MEMORY_ARGUMENT


@pytest.fixture
def upload_root(settings, tmp_path):
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    return settings.MNEMO_UPLOAD_DIR


def leave_task_traces(user) -> dict[str, list]:
    """Queued, finished, failed and scheduled tasks about the user, as the app leaves them."""
    session_id = str(ChatSession.objects.filter(user=user).values_list("id", flat=True)[0])
    memory_id = MemoryItem.objects.filter(user=user).values_list("id", flat=True)[0]
    job = ImportJob.objects.create(user=user)
    queued = [
        async_task(CLOSE_TASK, session_id, task_name=f"close-{session_id}", sync=False),
        async_task(IMPORT_TASK, str(job.id), sync=False),
        async_task(ROLLUP_TASK, user.pk, "default", sync=False),
    ]
    now = timezone.now()
    finished = []
    for func, args, success in [
        (CLOSE_TASK, (session_id,), True),
        (BACKFILL_TASK, (memory_id,), True),
        (ROLLUP_TASK, (user.pk, "default"), False),
        (IMPORT_TASK, (str(job.id),), False),
    ]:
        task = Task.objects.create(
            id=uuid.uuid4().hex,
            name=f"task-{uuid.uuid4().hex[:8]}",
            func=func,
            args=args,
            kwargs={},
            result=f"done {args[0]}",
            started=now,
            stopped=now,
            success=success,
        )
        finished.append(task.pk)
    schedule = Schedule.objects.create(
        name=f"close-retry-{session_id}-1",
        func=CLOSE_TASK,
        args=repr(session_id),
        schedule_type=Schedule.ONCE,
        next_run=now,
    )
    return {
        "needles": [session_id, str(job.id)],
        "queued": queued,
        "finished": finished,
        "scheduled": [schedule.pk],
    }


def _text_of(row, fields) -> str:
    return "\x1f".join(str(getattr(row, f.attname)) for f in fields)


def model_rows_mentioning(needles: list[str]) -> dict[str, int]:
    """Rows of every model of every app whose values, as the ORM reads them (pickled task
    arguments and results decoded, queued task packages unsigned), contain a needle."""
    found: dict[str, int] = {}
    for model in apps.get_models(include_auto_created=True):
        if model._meta.proxy:
            continue
        fields = model._meta.concrete_fields
        for row in model._base_manager.all().iterator():
            text = _text_of(row, fields)
            if isinstance(row, OrmQ):
                text += str(row.task)
            if any(needle in text for needle in needles):
                found[model._meta.label] = found.get(model._meta.label, 0) + 1
    return found


def files_mentioning(root, needles: list[str]) -> list[str]:
    hits = []
    if root.exists():
        for path in root.rglob("*"):
            text = str(path)
            if path.is_file():
                text += path.read_bytes().decode("utf-8", "replace")
            if any(needle in text for needle in needles):
                hits.append(str(path))
    return hits


def test_the_task_functions_named_for_erasure_exist():
    for dotted in (*TASK_USER_ARGUMENT, *TASK_MEMORY_ARGUMENT, CLOSE_TASK, IMPORT_TASK):
        assert callable(import_string(dotted))


def test_erasure_leaves_no_row_task_or_file_naming_the_user(
    api, user, other_user, upload_root, django_capture_on_commit_callbacks
):
    fill_every_owned_table(user, marker="alicemark")
    fill_every_owned_table(other_user, marker="bobmark")
    alice = leave_task_traces(user)
    bob = leave_task_traces(other_user)
    upload = upload_root / str(user.pk) / "job" / "conversations.json"
    upload.parent.mkdir(parents=True)
    upload.write_text('[{"name": "alicemark trip"}]')
    alice_needles = ["alicemark", *alice["needles"]]
    assert model_rows_mentioning(alice_needles)
    assert OrmQ.objects.count() == 6 and Task.objects.count() == 8

    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete("/api/v1/me", {"confirm": "alice"}, format="json")

    assert response.status_code == 200, response.content
    deleted = response.json()["deleted"]
    assert (deleted["django_q.OrmQ"], deleted["django_q.Task"], deleted["django_q.Schedule"]) == (
        3,
        4,
        1,
    )
    assert model_rows_mentioning(alice_needles) == {}
    assert tables_mentioning("alicemark") == {}
    for needle in alice["needles"]:
        assert tables_mentioning(needle) == {}, needle
    assert files_mentioning(settings.MNEMO_UPLOAD_DIR, alice_needles) == []
    assert not (upload_root / str(user.pk)).exists()
    # The rollup and backfill tasks name the user by number: those went, bob's stayed.
    assert not Task.objects.filter(func=ROLLUP_TASK, args=(user.pk, "default")).exists()
    # Bob's queued work, history and schedules are untouched.
    assert sorted(str(row.task["id"]) for row in OrmQ.objects.all()) == sorted(bob["queued"])
    assert sorted(Task.objects.values_list("pk", flat=True)) == sorted(bob["finished"])
    assert list(Schedule.objects.values_list("pk", flat=True)) == bob["scheduled"]
    assert model_rows_mentioning(["bobmark", *bob["needles"]])
