"""Exactly once under a race: 20 simultaneous commits of one session, real threads, each with
its own database connection, against the real (committed) database."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection

from ingestion_app.models import MemoryCommitLog, MemoryItem
from tests.conftest import client_for
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_message_hooks")]


THREADS = 20


def race(user, session, threads: int = THREADS) -> list:
    """Fire `threads` commit requests at once; returns (status, body) per thread."""
    barrier = threading.Barrier(threads)
    results: list = [None] * threads

    def worker(index: int) -> None:
        try:
            client = client_for(user)
            barrier.wait(timeout=30)
            response = client.post(
                "/api/v1/memory/commit", {"chat_session_id": str(session.id)}, format="json"
            )
            results[index] = (response.status_code, response.json())
        except Exception as exc:  # reported by the assertions below
            results[index] = ("error", repr(exc))
        finally:
            connection.close()

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=120)
    return results


def assert_no_duplicate_facts(user):
    counts = Counter(MemoryItem.objects.filter(user=user).values_list("content", flat=True))
    assert counts and max(counts.values()) == 1, counts


def test_twenty_concurrent_commits_distill_each_message_once(user):
    session = open_session(user)
    add_message(session, "user", "I live in Lisbon and I work at Acme as a designer.")
    add_message(session, "assistant", "Great to know.")
    last = add_message(session, "user", "I play the cello. My brother Tom is a pilot.")

    results = race(user, session)

    assert all(status == 200 for status, _ in results), results
    committed = sorted(body["facts_committed"] for _, body in results)
    assert committed == [0] * (THREADS - 1) + [4]
    assert {body["high_water_mark"] for _, body in results} == {last.id}
    assert MemoryItem.objects.filter(user=user).count() == 4
    assert_no_duplicate_facts(user)
    log = MemoryCommitLog.objects.get(chat_session=session)
    assert (log.high_water_mark, log.commit_count, log.facts_committed) == (last.id, 1, 4)

    # New messages, another race: only the new ones are distilled, once.
    newest = add_message(session, "user", "I drive a red Volvo.")
    results = race(user, session)
    assert sorted(body["facts_committed"] for _, body in results) == [0] * (THREADS - 1) + [1]
    assert MemoryItem.objects.filter(user=user).count() == 5
    assert_no_duplicate_facts(user)
    assert MemoryCommitLog.objects.get(chat_session=session).high_water_mark == newest.id


def test_concurrent_commits_call_the_model_once(user, fake_openai_embeddings):
    server = fake_openai_embeddings
    server.delay_seconds = 0.2  # a slow model widens the race window
    server.json_responder = lambda body: {
        "facts": [
            {"text": "The user lives in Lisbon.", "source_message_ids": []},
            {"text": "The user plays the cello.", "source_message_ids": []},
        ]
    }
    session = open_session(user)
    add_message(session, "user", "I live in Lisbon and I play the cello.")

    results = race(user, session)

    assert all(status == 200 for status, _ in results), results
    assert sorted(body["facts_committed"] for _, body in results) == [0] * (THREADS - 1) + [2]
    assert len(server.bodies("/chat/completions")) == 1
    assert len(server.bodies("/embeddings")) == 1
    assert MemoryItem.objects.filter(user=user).count() == 2
    assert_no_duplicate_facts(user)


def test_concurrent_commits_of_two_sessions_do_not_duplicate_a_fact(user):
    """Same fact said in two sessions, committed at the same time: stored once (commits of one
    user are serialized, so the second sees the first's fact as a duplicate)."""
    sessions = [open_session(user), open_session(user)]
    for session in sessions:
        add_message(session, "user", "I live in Lisbon.")
    barrier = threading.Barrier(2)
    statuses = []

    def worker(session):
        try:
            client = client_for(user)
            barrier.wait(timeout=30)
            response = client.post(
                "/api/v1/memory/commit", {"chat_session_id": str(session.id)}, format="json"
            )
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert statuses == [200, 200]
    assert MemoryItem.objects.filter(user=user).count() == 1
