"""ingestion_app models, one module per concept; import them all here for Django."""

from ingestion_app.models.commits import MemoryCommitLog, ProjectContext  # noqa: F401
from ingestion_app.models.documents import Document, DocumentIngestJob  # noqa: F401
from ingestion_app.models.memory_items import FactHistory, MemoryItem  # noqa: F401
