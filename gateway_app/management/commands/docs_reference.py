"""Write the generated reference pages and .env.example (gateway_app/reference_docs.py)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gateway_app.reference_docs import reference_stale, reference_write


class Command(BaseCommand):
    help = (
        "Generate docs/reference/{settings,commands,mcp-tools,api}.md and .env.example from "
        "the code (the settings table, the management commands, the MCP tools, the OpenAPI "
        "schema)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--check", action="store_true", help="write nothing; fail if a file is out of date"
        )

    def handle(self, *args, check: bool, **options):
        if check:
            stale = reference_stale()
            if stale:
                names = ", ".join(str(path.relative_to(settings.BASE_DIR)) for path in stale)
                raise CommandError(f"out of date: {names} (run `manage.py docs_reference`)")
            self.stdout.write("reference pages are current")
            return
        for path in reference_write():
            self.stdout.write(f"wrote {path.relative_to(settings.BASE_DIR)}")
