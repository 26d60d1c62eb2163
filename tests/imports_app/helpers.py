"""Shared helpers of the import tests: run a job over local files, read its chunks."""

from __future__ import annotations

from imports_app.models import ImportJob
from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from ingestion_app.models import MemoryItem


def run_import(user, *paths, **kwargs) -> ImportJob:
    job = import_job_create_from_paths(user=user, paths=list(paths), **kwargs)
    return import_job_run(job_id=job.id)


def import_chunks(user):
    return MemoryItem.objects.filter(user=user, source=MemoryItem.Source.CHUNK)


EXCHANGES = [
    ("How do I configure pgvector HNSW indexes in Django?", "Use HnswIndex with opclasses."),
    ("Which opclass matches cosine distance?", "vector_cosine_ops with CosineDistance."),
    ("How do I store embeddings from sentence-transformers?", "Convert to a list of floats."),
]
