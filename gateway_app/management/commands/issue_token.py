"""Print a user's API token; with --create-user, create the user first; with --end-users, let
the token act for the end users of the chat app that uses it (gateway_app.services.end_users).

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
        parser.add_argument("username", help="the user the token acts for")
        parser.add_argument("--create-user", action="store_true", help="create the user if missing")
        parser.add_argument(
            "--end-users",
            choices=["jwt", "headers"],
            help="let this token act for its chat app's end users: jwt (a signed "
            "X-OpenWebUI-User-Jwt only) or headers (also a plain user-id header or the OpenAI "
            "`user` field; for an app on a trusted network)",
        )
        parser.add_argument("--jwt-secret", default="", help="the HS256 secret the app signs with")
        parser.add_argument(
            "--user-id-header",
            default="",
            help="the plain user-id header in headers mode (default X-OpenWebUI-User-Id)",
        )

    def handle(
        self, *args, username, create_user, end_users, jwt_secret, user_id_header, **options
    ):
        if end_users == "jwt" and not jwt_secret:
            raise CommandError("--end-users jwt needs --jwt-secret (the app's signing secret).")
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
        if end_users:
            from gateway_app.services.end_users import end_user_grant_set

            end_user_grant_set(
                app_user=user,
                mode=end_users,
                jwt_secret=jwt_secret,
                user_id_header=user_id_header,
            )
            self.stderr.write(f"This token now acts for the end users its app names ({end_users}).")
        self.stdout.write(token.key)
        if not user.has_usable_password():
            what = "Created user" if created else "User"
            self.stderr.write(
                f"{what} {username!r} has no password: the token above works for the API, but "
                f"logging in to the pages needs one. Set it with:\n"
                f"  python manage.py changepassword {username}"
            )
