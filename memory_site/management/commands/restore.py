"""Load a dump written by `backup` into the configured database, replacing what is there."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from memory_site.pg_tools import pg_tool_run


class Command(BaseCommand):
    help = (
        "Replace the database's contents with FILE (a `backup` dump) using pg_restore. Stop "
        "the web server and the worker first; start with the MNEMO_ENCRYPTION_KEYS of the "
        "backup."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="a dump written by `manage.py backup`")
        parser.add_argument(
            "--yes", action="store_true", help="do not ask before replacing the database"
        )

    def handle(self, *args, file: str, yes: bool, **options):
        source = Path(file)
        if not source.is_file():
            raise CommandError(f"no such dump: {source}")
        if not yes:
            answer = input("This replaces everything in the database. Type 'yes' to go on: ")
            if answer.strip().lower() != "yes":
                raise CommandError("restore cancelled")
        connections.close_all()
        completed = pg_tool_run(
            "pg_restore",
            ["--clean", "--if-exists", "--no-owner", "--single-transaction", str(source)],
        )
        if completed.returncode != 0:
            raise CommandError(f"pg_restore failed: {completed.stderr.strip()[-1000:]}")
        self.stdout.write(f"restored {source}")
