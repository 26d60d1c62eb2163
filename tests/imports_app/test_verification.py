"""The verification report of an import job."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from imports_app.services import verification
from ingestion_app.chunking.markdown import FRONTMATTER_FIELDS, parse_markdown, render_markdown
from ingestion_app.models import MemoryItem
from tests.imports_app.helpers import EXCHANGES, import_chunks, run_import
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    write_json,
)

pytestmark = pytest.mark.django_db


def test_verification_report_checks_ids_counts_and_parsing(
    user, tmp_path, fake_embedder, upload_dir
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])

    job = run_import(user, path)

    verification = job.summary["verification"]
    assert verification == {
        "ok": True,
        "chunk_ids_unique": True,
        "chunks_reported": 3,
        "chunks_found": 3,
        "chunks_parsed": 3,
        "unparseable": [],
        "new_pairs": 3,
        "pairs_in_chunks": 3,
        "each_pair_in_one_chunk": True,
    }
    assert job.summary["total_chunks"] == 3
    for chunk in import_chunks(user):
        frontmatter, header, exchange = parse_markdown(
            render_markdown(
                frontmatter={k: chunk.metadata[k] for k in FRONTMATTER_FIELDS},
                header=chunk.header,
                exchange=chunk.content,
            )
        )
        assert frontmatter["chunk_id"] == chunk.chunk_id and exchange == chunk.content


def _verify(job, *, pooled: bool) -> dict:
    if not pooled:
        return verification.import_job_verify(job=job)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return verification.import_job_verify(job=job, pool=pool)


@pytest.mark.parametrize("pooled", [False, True], ids=["inline", "in-pool"])
def test_verification_flags_a_stored_chunk_that_no_longer_parses(
    user, tmp_path, fake_embedder, upload_dir, pooled
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])
    job = run_import(user, path)
    broken = import_chunks(user).order_by("id").first()
    metadata = dict(broken.metadata)
    del metadata["turn_range"]
    MemoryItem.objects.filter(id=broken.id).update(metadata=metadata)
    MemoryItem.objects.filter(id=import_chunks(user).order_by("id").last().id).delete()

    report = _verify(job, pooled=pooled)

    assert report["ok"] is False
    assert report["unparseable"] == [broken.chunk_id]
    assert (report["chunks_reported"], report["chunks_found"]) == (3, 2)


@pytest.mark.parametrize("pooled", [False, True], ids=["inline", "in-pool"])
def test_verification_flags_a_turn_pair_stored_in_two_chunks(
    user, tmp_path, fake_embedder, upload_dir, pooled
):
    path = write_json(tmp_path / "c.json", [chatgpt_linear("A", EXCHANGES)])
    job = run_import(user, path)
    first, second = import_chunks(user).order_by("id")[:2]
    metadata = dict(second.metadata)
    metadata["pair_keys"] = [*metadata["pair_keys"], *first.metadata["pair_keys"]]
    MemoryItem.objects.filter(id=second.id).update(metadata=metadata)

    report = _verify(job, pooled=pooled)

    assert report["ok"] is False
    assert report["each_pair_in_one_chunk"] is False
    assert report["unparseable"] == [] and report["chunks_found"] == 3
