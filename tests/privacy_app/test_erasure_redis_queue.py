"""With REDIS_URL the task queue is a Redis list: erasure removes the tasks that name the user
from it (a real redis-server), keeps everybody else's, and puts them back if it fails."""

from __future__ import annotations

import shutil

import pytest
from django_q.brokers import get_broker
from django_q.conf import Conf
from django_q.signing import SignedPackage
from django_q.tasks import async_task

from imports_app.models import ImportJob
from memory_site import task_paths
from privacy_app.services import user_data
from privacy_app.services.user_data import TASK_USER_ARGUMENT
from sessions_app.models import ChatSession
from tests.deploy.servers import LOOPBACK, RedisServer, free_port

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        shutil.which("redis-server") is None,
        reason="redis-server is not installed (`make redis-deps`)",
    ),
]

[ROLLUP_TASK] = TASK_USER_ARGUMENT


@pytest.fixture(scope="module")
def redis_server():
    server = RedisServer().start()
    yield server
    server.stop()


def _use_redis_broker(monkeypatch, url: str) -> None:
    """django-q2 reads its configuration once, at import: point its Conf at Redis, queued for
    real (the test settings run tasks inline)."""
    monkeypatch.setattr(Conf, "ORM", None)
    monkeypatch.setattr(Conf, "REDIS", url)
    monkeypatch.setattr(Conf, "DJANGO_REDIS", None)
    monkeypatch.setattr(Conf, "SYNC", False)


@pytest.fixture
def redis_queue(redis_server, monkeypatch):
    _use_redis_broker(monkeypatch, redis_server.url)
    broker = get_broker()
    broker.connection.flushdb()
    yield broker
    broker.connection.flushdb()


def queue_work_for(user) -> dict:
    """A session close, an import and a rollup rebuild queued for the user, as the app does."""
    session = ChatSession.objects.create(user=user)
    job = ImportJob.objects.create(user=user)
    ids = [
        async_task(task_paths.SESSION_CLOSE_TASK, str(session.id), task_name=f"close-{session.id}"),
        async_task(task_paths.IMPORT_TASK, str(job.id)),
        async_task(ROLLUP_TASK, user.pk, "default"),
    ]
    return {"task_ids": ids, "needles": [str(session.id), str(job.id)]}


def queued_packages(broker) -> list[dict]:
    return [
        SignedPackage.loads(entry) for entry in broker.connection.lrange(broker.list_key, 0, -1)
    ]


def test_erasure_removes_the_users_queued_tasks_from_redis(api, user, other_user, redis_queue):
    alice = queue_work_for(user)
    bob = queue_work_for(other_user)
    assert redis_queue.queue_size() == 6

    response = api.delete("/api/v1/me", {"confirm": "alice"}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["deleted"]["django_q.RedisQueue"] == 3
    left = queued_packages(redis_queue)
    assert sorted(package["id"] for package in left) == sorted(bob["task_ids"])
    for package in left:
        text = repr(package)
        assert not any(needle in text for needle in alice["needles"]), text
    assert not any(p["func"] == ROLLUP_TASK and p["args"][0] == user.pk for p in left)


def test_a_failed_erasure_puts_the_tasks_back(user, other_user, redis_queue, monkeypatch):
    queued = queue_work_for(user)["task_ids"] + queue_work_for(other_user)["task_ids"]

    def broken(session_ids):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(user_data, "_forget_retention_log", broken)
    with pytest.raises(RuntimeError):
        user_data.user_erase(user=user)

    assert sorted(p["id"] for p in queued_packages(redis_queue)) == sorted(queued)
    assert ChatSession.objects.filter(user=user).exists()


def test_redis_unreachable_is_503_and_erases_nothing(api, user, monkeypatch):
    _use_redis_broker(monkeypatch, f"redis://{LOOPBACK}:{free_port()}/0")

    response = api.delete("/api/v1/me", {"confirm": "alice"}, format="json")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "task_queue_unavailable"
    assert response["Retry-After"]
    assert type(user).objects.filter(pk=user.pk).exists()
