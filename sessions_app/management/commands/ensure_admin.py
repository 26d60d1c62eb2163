import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Create the admin account on first run (idempotent) and print how to log in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin", help="the admin account's name")
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000", help="the address printed with the login"
        )

    def handle(self, *args, username, url, **options):
        user_model = get_user_model()
        password_file = settings.DATA_DIR / "admin_password"
        user = user_model.objects.filter(username=username).first()
        if user is None:
            password = secrets.token_urlsafe(12)
            user = user_model.objects.create_superuser(
                username=username, password=password, email=""
            )
            password_file.write_text(password)
            password_file.chmod(0o600)
            self.stdout.write(f"Created admin account '{username}'.")
        token, _ = Token.objects.get_or_create(user=user)
        password = (
            password_file.read_text().strip()
            if password_file.exists()
            else "(changed since first run)"
        )
        self.stdout.write(
            f"\n  Mnemo is at {url}/\n"
            f"  Log in as: {username} / {password}   (password kept in {password_file})\n"
            f"  Admin:     {url}/admin/\n"
            f"  API docs:  {url}/api/docs/\n"
            f"  API token: {token.key}   (curl -H 'Authorization: Token {token.key}' {url}/api/v1/chat/sessions)\n"
        )
