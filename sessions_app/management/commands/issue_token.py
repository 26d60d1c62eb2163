"""Print a user's API token; with --create-user, create the user first.

Only the token goes to stdout (`TOKEN=$(manage.py issue_token alice)` works); the note on how
to log in to the pages goes to stderr.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = (
        "Print the API token of USERNAME (the token is created if missing; the user only with "
        "--create-user). A user without a password is told how to set one."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create-user", action="store_true", help="create the user if missing")

    def handle(self, *args, username, create_user, **options):
        user_model = get_user_model()
        created = False
        try:
            user = user_model.objects.get(username=username)
        except user_model.DoesNotExist as exc:
            if not create_user:
                raise CommandError(
                    f"No user named {username!r} (add --create-user to create one)."
                ) from exc
            user = user_model.objects.create_user(username=username)
            created = True
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
        if not user.has_usable_password():
            what = "Created user" if created else "User"
            self.stderr.write(
                f"{what} {username!r} has no password: the token above works for the API, but "
                f"logging in to the pages needs one. Set it with:\n"
                f"  python manage.py changepassword {username}"
            )
