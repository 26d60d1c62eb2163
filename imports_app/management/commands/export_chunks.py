"""Write every stored memory item as a Markdown file with YAML frontmatter.

Turn-pair chunks (live and imported), message items and passages, document chunks, summaries
and committed facts: each file carries the reference's nine fields (title, source, session
file, original date, ...) plus its kind and provenance.

    python manage.py export_chunks DIR [--user alice] [--platform chatgpt] [--agent-id ID]

One file per chunk, named as the reference names chunk files
(``YYYY-MM-DD_HH-MM_session-<id>_pair-<NNN>_<topic>.md``); its frontmatter reads back, with any
YAML parser, to the stored fields. Existing files in DIR are overwritten, others untouched.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from imports_app.services.verification import chunks_export


class Command(BaseCommand):
    help = "Export memory items (every kind) as Markdown files with YAML frontmatter."

    def add_arguments(self, parser):
        parser.add_argument("directory", help="folder the Markdown files are written to")
        parser.add_argument("--user", default=None, help="only this user's chunks")
        parser.add_argument("--platform", default=None, help="only chunks from this platform")
        parser.add_argument("--agent-id", default=None, help="only chunks of this agent_id")

    def handle(self, *args, directory, user, platform, agent_id, **options):
        owner = None
        if user:
            try:
                owner = get_user_model().objects.get(username=user)
            except get_user_model().DoesNotExist as exc:
                raise CommandError(f"No user named {user!r}.") from exc
        target = Path(directory)
        written = chunks_export(directory=target, user=owner, platform=platform, agent_id=agent_id)
        self.stdout.write(f"Wrote {written} files to {target}")
