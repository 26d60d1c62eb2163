"""Large files in the job's worker processes: same chunks as inline, one pool, fallback."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest

from imports_app.services import conversations as import_conversations
from tests.imports_app.helpers import EXCHANGES, import_chunks, run_import
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    write_json,
)

pytestmark = pytest.mark.django_db


def test_worker_processes_give_the_same_chunks_as_inline(
    user, other_user, tmp_path, fake_embedder, upload_dir, monkeypatch
):
    conversations = [
        chatgpt_linear(f"Topic {n}", EXCHANGES, conversation_id=f"conv-{n}") for n in range(40)
    ]
    path = write_json(tmp_path / "c.json", conversations)
    monkeypatch.setattr(import_conversations, "PAIRS_PER_ROUND", 20)  # many rounds in flight

    run_import(user, path)  # inline (small file)
    monkeypatch.setattr(import_conversations, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(import_conversations, "PARALLEL_WORKERS", 2)
    job = run_import(other_user, path)

    assert job.files.get().chunks_written == 120
    inline = {
        (c.metadata["conversation_id"], c.metadata["turn_range"]): (c.header, c.topics, c.content)
        for c in import_chunks(user)
    }
    pooled = {
        (c.metadata["conversation_id"], c.metadata["turn_range"]): (c.header, c.topics, c.content)
        for c in import_chunks(other_user)
    }
    assert pooled == inline
    assert job.summary["verification"]["ok"] is True


def test_large_files_of_one_job_share_one_worker_pool(
    user, tmp_path, fake_embedder, upload_dir, monkeypatch
):
    started = []

    def pool():
        started.append(ThreadPoolExecutor(max_workers=2))
        started[-1]._max_workers = 2
        return started[-1]

    monkeypatch.setattr(import_conversations, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(import_conversations, "_worker_pool", pool)
    first = write_json(tmp_path / "a.json", [chatgpt_linear("A", EXCHANGES)])
    second = write_json(tmp_path / "b.json", [chatgpt_linear("B", EXCHANGES[:2])])

    job = run_import(user, first, second)

    assert [f.status for f in job.files.order_by("position")] == ["imported", "imported"]
    assert import_chunks(user).count() == 5
    assert job.summary["verification"]["ok"] is True
    assert len(started) == 1
    with pytest.raises(RuntimeError):  # shut down when the job ended
        started[0].submit(print)


def test_a_broken_worker_pool_falls_back_to_inline_import(
    user, tmp_path, fake_embedder, upload_dir, monkeypatch
):
    class BrokenPool:
        _max_workers = 1

        def submit(self, *args, **kwargs):
            raise BrokenProcessPool("worker killed")

        def shutdown(self, **kwargs):
            pass

    monkeypatch.setattr(import_conversations, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(import_conversations, "_worker_pool", lambda: BrokenPool())
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])

    job = run_import(user, path)

    assert job.files.get().status == "imported"
    assert import_chunks(user).count() == 3
