"""Admin screens, one module per concept (Django autodiscovers this package)."""

from ingestion_app.admin import commits, documents, memory_items  # noqa: F401
