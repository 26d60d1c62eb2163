"""Two web nodes and two worker clusters on one PostgreSQL (TCP) and one Redis keep the
exactly-once promises: a close, a commit and an import each happen once whichever node or
worker gets the request or the task.

Runs under `make test-external` (it needs the external PostgreSQL and Redis that
tests/deploy/external.py starts); a worker killed mid-import is bench/multinode.py (recovery
waits for the stale-import window, minutes).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
from django.db import connection

from context_app.models import SessionSummary
from imports_app.models import ImportJob
from ingestion_app.models import MemoryItem
from sessions_app.models import ChatSession
from tests.deploy.cluster import Cluster, node_environment
from tests.factories import make_user
from tests.fake_openai import FakeOpenAIServer
from tests.ingestion_app.export_builders import chatgpt_linear

pytestmark = [
    pytest.mark.skipif(
        not (os.environ.get("MNEMO_TEST_EXTERNAL") and os.environ.get("REDIS_URL")),
        reason="needs the servers `make test-external` starts (tests/deploy/external.py)",
    ),
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
]

SESSIONS = 6
COMMITS = 20


def wait_until(predicate, *, timeout: float, what: str, cluster: Cluster):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} not reached in {timeout} s\n{cluster.logs()}")


@pytest.fixture
def cluster(tmp_path):
    """Two uvicorn nodes (ports A and B) and two qcluster processes sharing the test database
    and a Redis database of their own; all stopped at the end, even on failure."""
    import redis

    parts = urlsplit(os.environ["DATABASE_URL"])
    database_url = parts._replace(path="/" + connection.settings_dict["NAME"]).geturl()
    redis_url = os.environ["REDIS_URL"].rsplit("/", 1)[0] + "/1"
    redis.from_url(redis_url).flushdb()
    fake = FakeOpenAIServer(dimensions=384).start()
    nodes = Cluster(
        node_environment(
            database_url=database_url, redis_url=redis_url, fake_openai_url=fake.base_url
        ),
        tmp_path,
    )
    try:
        nodes.start_web()
        nodes.start_web()
        nodes.start_worker(workers=1)
        nodes.start_worker(workers=1)
        nodes.wait_ready()
        yield nodes
    finally:
        nodes.stop()
        fake.stop()


def token_for(user) -> dict:
    from rest_framework.authtoken.models import Token

    return {"Authorization": f"Token {Token.objects.get_or_create(user=user)[0].key}"}


def test_two_web_nodes_and_two_workers_keep_close_commit_and_import_exactly_once(cluster):
    (_, node_a), (_, node_b) = cluster.web
    user = make_user("carol")
    headers = token_for(user)
    a = httpx.Client(base_url=node_a, headers=headers, timeout=60)
    b = httpx.Client(base_url=node_b, headers=headers, timeout=60)

    # Sessions opened (and written to) on A, closed on B and again on A at the same time.
    session_ids = []
    for index in range(SESSIONS):
        opened = a.post("/api/v1/chat/new", json={"title": f"trip {index}"})
        assert opened.status_code == 201, opened.text
        session_id = opened.json()["session_id"]
        for role, content in [
            ("user", f"I am planning trip number {index} to Kyoto and Osaka in April."),
            ("assistant", "Cherry blossom season: book the hotels early."),
            ("user", "I prefer quiet ryokans and vegetarian food."),
        ]:
            sent = a.post(
                "/api/v1/chat/messages",
                json={"session_id": session_id, "role": role, "content": content},
            )
            assert sent.status_code == 201, sent.text
        session_ids.append(session_id)
    with ThreadPoolExecutor(max_workers=8) as pool:
        closes = list(
            pool.map(
                lambda pair: pair[0].post("/api/v1/chat/close", json={"session_id": pair[1]}),
                [(client, sid) for sid in session_ids for client in (b, a)],
            )
        )
    assert {response.status_code for response in closes} == {202}, [r.text for r in closes]
    wait_until(
        lambda: ChatSession.objects.filter(id__in=session_ids, status="closed").count() == SESSIONS,
        timeout=90,
        what="every session closed by a worker",
        cluster=cluster,
    )
    for session in ChatSession.objects.filter(id__in=session_ids):
        assert session.close_attempts == 1, session.id  # claimed by exactly one worker
        assert SessionSummary.objects.filter(session=session).count() == 1
        summaries = MemoryItem.objects.filter(
            user=user, source=MemoryItem.Source.SUMMARY, metadata__session_id=str(session.id)
        )
        assert summaries.count() == 1, session.id

    # 20 concurrent commits of one session, spread over both nodes.
    opened = b.post("/api/v1/chat/new", json={"title": "about me"}).json()
    for role, content in [
        ("user", "I live in Lisbon and I work at Acme as a designer."),
        ("assistant", "Great to know."),
        ("user", "I play the cello. My brother Tom is a pilot."),
    ]:
        (a if role == "user" else b).post(
            "/api/v1/chat/messages",
            json={"session_id": opened["session_id"], "role": role, "content": content},
        )
    clients = [a, b] * (COMMITS // 2)
    with ThreadPoolExecutor(max_workers=COMMITS) as pool:
        commits = list(
            pool.map(
                lambda client: client.post(
                    "/api/v1/memory/commit", json={"chat_session_id": opened["session_id"]}
                ),
                clients,
            )
        )
    assert [response.status_code for response in commits] == [200] * COMMITS, [
        response.text for response in commits if response.status_code != 200
    ]
    committed = sorted(response.json()["facts_committed"] for response in commits)
    assert committed[:-1] == [0] * (COMMITS - 1) and committed[-1] > 0, committed
    facts = MemoryItem.objects.filter(user=user, source=MemoryItem.Source.FACT)
    assert facts.count() == committed[-1]
    assert max(Counter(facts.values_list("content", flat=True)).values()) == 1

    # Two imports submitted at the same moment, one to each node.
    exports = [
        chatgpt_linear(
            f"Export {n}",
            [(f"Question {n}.{i} about sourdough bread", f"Answer {n}.{i}.") for i in range(3)],
        )
        for n in range(2)
    ]

    def upload(pair):
        client, export = pair
        files = {"files": ("conversations.json", json.dumps([export]).encode(), "text/json")}
        return client.post("/api/v1/imports", files=files)

    with ThreadPoolExecutor(max_workers=2) as pool:
        uploads = list(pool.map(upload, [(a, exports[0]), (b, exports[1])]))
    assert [response.status_code for response in uploads] == [202, 202], [
        response.text for response in uploads
    ]
    job_ids = [response.json()["import_id"] for response in uploads]
    wait_until(
        lambda: ImportJob.objects.filter(id__in=job_ids, status="done").count() == 2,
        timeout=90,
        what="both imports done",
        cluster=cluster,
    )
    chunk_ids = []
    for job in ImportJob.objects.filter(id__in=job_ids):
        assert job.attempts == 1, job.id  # claimed by exactly one worker
        (imported,) = job.files.all()
        assert (imported.status, imported.turn_pairs) == ("imported", 3)
        chunk_ids += imported.chunk_ids
    assert len(chunk_ids) == len(set(chunk_ids)) == 6
    assert MemoryItem.objects.filter(user=user, chunk_id__in=chunk_ids).count() == 6
    # Either node reports the job the other accepted.
    assert b.get(f"/api/v1/imports/{job_ids[0]}").json()["status"] == "done"
    assert a.get(f"/api/v1/imports/{job_ids[1]}").json()["status"] == "done"
