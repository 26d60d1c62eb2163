"""Re-encrypt every encrypted column under the primary key, so an old key can be retired.

Rotation: put the new key first in MNEMO_ENCRYPTION_KEYS (keep the old ones after it), restart,
run `manage.py rotate_keys`, then drop the old keys. The encrypted columns are discovered through
the app registry (every `EncryptedTextField` of every concrete model), so columns added later
are covered without touching this command.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken
from django.apps import apps
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, models, transaction

from memory_site.crypto import EncryptedTextField, rotate_token


def encrypted_columns() -> list[tuple[type[models.Model], models.Field]]:
    """(model, field) for every EncryptedTextField stored in a table of its own model."""
    columns = []
    for model in apps.get_models():
        if model._meta.proxy or not model._meta.managed:
            continue
        for field in model._meta.local_concrete_fields:
            if isinstance(field, EncryptedTextField):
                columns.append((model, field))
    return columns


def _under_key(key: Fernet, token: str) -> bool:
    try:
        key.decrypt(token.encode("ascii"))
    except (InvalidToken, ValueError):
        return False
    return True


class Command(BaseCommand):
    help = "Re-encrypt all encrypted columns under the first key of MNEMO_ENCRYPTION_KEYS."

    def add_arguments(self, parser):
        parser.add_argument(
            "--batch-size", type=int, default=500, help="rows re-encrypted per transaction"
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Count what would be re-encrypted, change nothing.",
        )

    def handle(self, *args, batch_size: int, dry_run: bool, **options):
        """Idempotent: values already under the primary key are counted as current and left alone.

        Reads and writes the raw ciphertext with SQL (the field would decrypt on read and
        encrypt again on write), one transaction per batch, keyset-paginated by primary key.
        A value no configured key can decrypt is counted and reported; the command then exits
        with an error, after finishing every other row.
        """
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        primary = Fernet(settings.MNEMO_ENCRYPTION_KEYS[0].encode())
        totals = {"rotated": 0, "current": 0, "unreadable": 0}
        for model, field in encrypted_columns():
            counts = self._rotate_column(model, field, primary, batch_size, dry_run)
            for key, value in counts.items():
                totals[key] += value
            self.stdout.write(
                f"{model._meta.label}.{field.name}: {counts['rotated']} re-encrypted, "
                f"{counts['current']} already current, {counts['unreadable']} unreadable"
            )
        verb = "would re-encrypt" if dry_run else "re-encrypted"
        self.stdout.write(
            f"total: {verb} {totals['rotated']}, {totals['current']} already current, "
            f"{totals['unreadable']} unreadable"
        )
        if totals["unreadable"]:
            raise CommandError(
                f"{totals['unreadable']} values cannot be decrypted with any configured key; "
                "keep the key that wrote them in MNEMO_ENCRYPTION_KEYS"
            )

    def _rotate_column(self, model, field, primary: Fernet, batch_size: int, dry_run: bool) -> dict:
        quote = connection.ops.quote_name
        table = quote(model._meta.db_table)
        pk = quote(model._meta.pk.column)
        column = quote(field.column)
        select = (
            f"SELECT {pk}, {column} FROM {table} "
            f"WHERE {pk} > %s AND {column} IS NOT NULL AND {column} <> '' ORDER BY {pk} LIMIT %s"
        )
        update = f"UPDATE {table} SET {column} = %s WHERE {pk} = %s"
        counts = {"rotated": 0, "current": 0, "unreadable": 0}
        last_pk = None
        while True:
            with transaction.atomic(), connection.cursor() as cursor:
                if last_pk is None:
                    cursor.execute(select.replace(f"{pk} > %s AND ", ""), [batch_size])
                else:
                    cursor.execute(select, [last_pk, batch_size])
                rows = cursor.fetchall()
                if not rows:
                    return counts
                changes = []
                for row_pk, token in rows:
                    if _under_key(primary, token):
                        counts["current"] += 1
                        continue
                    try:
                        changes.append((rotate_token(token), row_pk))
                    except (InvalidToken, ValueError):
                        counts["unreadable"] += 1
                if changes and not dry_run:
                    cursor.executemany(update, changes)
                counts["rotated"] += len(changes)
                last_pk = rows[-1][0]
