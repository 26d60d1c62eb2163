from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print the API token of USERNAME (the token is created if missing; the user only with --create-user)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create-user", action="store_true", help="create the user if missing")

    def handle(self, *args, username, create_user, **options):
        user_model = get_user_model()
        try:
            user = user_model.objects.get(username=username)
        except user_model.DoesNotExist as exc:
            if not create_user:
                raise CommandError(
                    f"No user named {username!r} (add --create-user to create one)."
                ) from exc
            user = user_model.objects.create_user(username=username)
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
