from django.urls import path

from ingestion_app.api import commit, documents, memories

urlpatterns = [
    path("knowledge/ingest", documents.DocumentIngestApi.as_view(), name="knowledge-ingest"),
    path(
        "knowledge/ingest/<uuid:job_id>",
        documents.DocumentIngestJobApi.as_view(),
        name="knowledge-ingest-job",
    ),
    path("memory/commit", commit.MemoryCommitApi.as_view(), name="memory-commit"),
    path("memories", memories.MemoryListApi.as_view(), name="memories"),
    path("memories/<int:memory_id>", memories.MemoryDetailApi.as_view(), name="memory-detail"),
    path(
        "memories/<int:memory_id>/history",
        memories.MemoryHistoryApi.as_view(),
        name="memory-history",
    ),
]
