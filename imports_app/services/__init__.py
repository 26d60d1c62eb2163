"""Chat-export imports: upload -> manifest -> parse -> chunk -> embed -> store -> verify.

The reference's batch mode, Layers 1-6, as one service:

1. ``import_job_create`` (API, admin) or ``import_job_create_from_paths`` (CLI) records one
   manifest row (`ImportFile`) per file with its size and content hash; the API queues
   ``imports_app.tasks.import_job_task`` after commit.
2. ``import_job_run`` claims the job (a conditional update, so two workers never run it
   together), opens archives into member rows, and imports each file in its own transaction:
   a file that fails leaves no chunk behind and never stops the others.
3. Per file: a file whose content hash was already imported is skipped; otherwise its
   conversations are streamed, redacted, chunked, given headers (LLM when configured, batched
   with bounded concurrency; else the local summarizer), embedded from header + user prompt
   in batches and bulk-inserted; the passages of long messages are inserted without vectors
   (found by their words at once) and embedded by a task queued when the file commits
   (``passage_vectors``). The pair ledger (`ImportedConversation`) makes re-imports
   and changed exports add only pairs not stored before.
4. ``import_job_verify`` checks the written chunk ids are unique and all present, and that
   every stored chunk renders to Markdown whose frontmatter parses back to the same fields.

Every step is idempotent: running a job again skips files already processed, and importing
the same export again writes nothing.

Modules, in the order a job runs through them: ``jobs`` (create, claim, run), ``archives``
(zip members), ``conversations`` (one file, the worker pool), ``writer`` (one round of
conversations into chunks; headers come from ``ingestion_app.services.headers``; its rows
are built, embedded and COPY-inserted by ``ingestion_app.services.memory_store``),
``verification`` (verify, summary, Markdown export), then the tasks after each file:
``entity_backfill`` and ``passage_vectors``. The names below are the package's public
interface.
"""

from __future__ import annotations

from imports_app.services.conversations import ImportProgress, import_file_process
from imports_app.services.jobs import (
    import_job_claim,
    import_job_create,
    import_job_create_from_paths,
    import_job_enqueue,
    import_job_get_for_user,
    import_job_run,
)
from imports_app.services.verification import (
    chunks_export,
    import_job_summary,
    import_job_verify,
    import_summary_lines,
)

__all__ = [
    "ImportProgress",
    "chunks_export",
    "import_file_process",
    "import_job_claim",
    "import_job_create",
    "import_job_create_from_paths",
    "import_job_enqueue",
    "import_job_get_for_user",
    "import_job_run",
    "import_job_summary",
    "import_job_verify",
    "import_summary_lines",
]
