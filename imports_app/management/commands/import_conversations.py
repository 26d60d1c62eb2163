"""Import chat exports from local files, folders or zip archives, with a progress bar.

    python manage.py import_conversations PATH [PATH ...] --user alice [--agent-id ID]

Runs in the foreground (no worker needed), extracts the entities of the imported chunks after
the import (the backfill a worker would otherwise run) and ends with the processing summary and
the verification report. Files are read in place and never modified; importing the same files
again writes nothing.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from imports_app.models import ImportFile, ImportJob
from imports_app.services.conversations import ImportProgress
from imports_app.services.entity_backfill import import_file_entities_backfill
from imports_app.services.jobs import import_job_create_from_paths, import_job_run
from imports_app.services.passage_vectors import import_job_passage_vectors
from imports_app.services.verification import import_summary_lines
from memory_site.errors import InvalidInput


class _BarProgress(ImportProgress):
    """One bar counting turn pairs; the current file and file count in its description."""

    def __init__(self, total_files: int, stream) -> None:
        self.total_files = total_files
        self.done_files = 0
        self.bar = tqdm(total=None, unit=" pairs", file=stream, dynamic_ncols=True)

    def file_started(self, import_file: ImportFile) -> None:
        name = import_file.name if len(import_file.name) <= 40 else "…" + import_file.name[-39:]
        self.bar.set_description(f"[{self.done_files + 1}/{self.total_files}] {name}")

    def pairs_done(self, count: int) -> None:
        self.bar.update(count)

    def file_finished(self, import_file: ImportFile) -> None:
        if not import_file.is_archive:
            self.done_files += 1
        else:
            self.total_files += import_file.members.count() - 1
        if import_file.status == ImportFile.Status.FAILED:
            self.bar.write(f"failed: {import_file.name}: {import_file.error}")

    def close(self) -> None:
        self.bar.close()


class Command(BaseCommand):
    help = "Import chat exports (ChatGPT, Claude, Gemini, Open WebUI, session logs, API logs)."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", help="files, folders or zip archives")
        parser.add_argument("--user", required=True, help="username who owns the memories")
        parser.add_argument("--agent-id", default="external", help="frontmatter agent_id")
        parser.add_argument("--project-id", default="", help="project the chunks are filed under")
        parser.add_argument("--app-id", default=None, help="app id (default: the default app)")

    def handle(self, *args, paths, user, agent_id, project_id, app_id, **options):
        try:
            owner = get_user_model().objects.get(username=user)
        except get_user_model().DoesNotExist as exc:
            raise CommandError(f"No user named {user!r}.") from exc
        try:
            job = import_job_create_from_paths(
                user=owner, paths=paths, agent_id=agent_id, project_id=project_id, app_id=app_id
            )
        except InvalidInput as exc:
            raise CommandError(exc.message) from exc
        progress = _BarProgress(job.files.count(), getattr(self.stderr, "_out", self.stderr))
        try:
            job = import_job_run(job_id=job.id, progress=progress)
        finally:
            progress.close()
        # The queued backfills then find these files done (the cursor is shared).
        imported = list(
            job.files.filter(status=ImportFile.Status.IMPORTED).values_list("id", flat=True)
        )
        extracted = sum(import_file_entities_backfill(import_file_id=i) for i in imported)
        embedded = import_job_passage_vectors(job=job)
        self.stdout.write(f"Import {job.id}: {job.status}")
        if extracted:
            self.stdout.write(f"Entities extracted from {extracted} chunks")
        if embedded:
            self.stdout.write(f"Passages embedded after the import: {embedded}")
        for line in import_summary_lines(job.summary):
            self.stdout.write(line)
        if job.status in (ImportJob.Status.FAILED, ImportJob.Status.PARTIAL):
            raise CommandError(job.error or "import failed")
