"""`manage.py profile_rebuild [--user NAME] [--app-id APP]`: read the profile again from
everything each user said (their chat messages and imported turns, oldest first)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from profile_app.services.profile import profile_rebuild


class Command(BaseCommand):
    help = "Rebuild learned profile entries from each user's messages and imports."

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this username")
        parser.add_argument(
            "--app-id",
            default=settings.MNEMO_DEFAULT_APP_ID,
            help="the app whose profiles are rebuilt",
        )

    def handle(self, *args, user=None, app_id, **options):
        users = get_user_model().objects.order_by("id")
        if user:
            users = users.filter(username=user)
            if not users.exists():
                raise CommandError(f"No user {user!r}.")
        total = 0
        for one in users.iterator():
            made = profile_rebuild(user=one, app_id=app_id)
            total += made
            if made:
                self.stdout.write(f"{one.get_username()}: {made} entries")
        self.stdout.write(f"profile_rebuild: {total} entries")
