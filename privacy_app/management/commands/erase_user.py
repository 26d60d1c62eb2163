"""Erase a user and everything Mnemo holds about them, as `DELETE /api/v1/me` does."""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.core.serializers.json import DjangoJSONEncoder

from privacy_app.services.user_data import user_erase, user_export


class Command(BaseCommand):
    help = (
        "Delete USERNAME with every row, vector, upload and queued task that names them, in "
        "one transaction. --export FILE writes their data first (as GET /api/v1/me/export)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", help="the user to erase")
        parser.add_argument("--export", metavar="FILE", help="write the user's data here first")
        parser.add_argument("--yes", action="store_true", help="do not ask before erasing")

    def handle(self, *args, username: str, export: str | None, yes: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        if export:
            Path(export).write_text(json.dumps(user_export(user=user), cls=DjangoJSONEncoder))
            self.stdout.write(f"exported {username} to {export}")
        if not yes:
            answer = input(f"Erase {username} and all their data for good? Type 'yes': ")
            if answer.strip().lower() != "yes":
                raise CommandError("erasure cancelled")
        report = user_erase(user=user)
        self.stdout.write(
            f"erased {report.username}: {report.rows_deleted} rows, {report.files_deleted} files"
        )
