"""Chat-export imports: the jobs and their per-file manifest, archive expansion, the parse
pool, the chunk writer, verification, and the backfills that follow an import (entities,
passage vectors). It writes memory only through ingestion_app's store (memory_store) and
reads the export formats through ingestion_app.parsers, which live chats share."""
