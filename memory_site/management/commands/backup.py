"""Dump the database to one file (pg_dump's custom format), embedded or external alike."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory_site.pg_tools import pg_tool_run


class Command(BaseCommand):
    help = (
        "Write the whole database to FILE with pg_dump (custom format, compressed), from the "
        "embedded PostgreSQL or DATABASE_URL. Keep MNEMO_ENCRYPTION_KEYS with it: message "
        "content is encrypted at rest and a dump is unreadable without them."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="where the dump is written (replaced if present)")

    def handle(self, *args, file: str, **options):
        target = Path(file)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        completed = pg_tool_run("pg_dump", ["--format=custom", "--no-owner", f"--file={partial}"])
        if completed.returncode != 0:
            partial.unlink(missing_ok=True)
            raise CommandError(f"pg_dump failed: {completed.stderr.strip()[-1000:]}")
        partial.replace(target)
        self.stdout.write(f"wrote {target} ({target.stat().st_size:,} bytes)")
