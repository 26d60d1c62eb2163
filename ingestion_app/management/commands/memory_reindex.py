"""Re-index stored memory into passages, exchange keys and provenance labels.

    python manage.py memory_reindex [--user alice]

Idempotent (a second run changes nothing) and batched (a session, or 200 imported chunks, per
transaction). Messages that are not memories (greetings, content-free questions, the offline
reply, pack echoes) lose their items; long messages become passages; imported chunks get the
passages of the current rule (import_passages.PASSAGE_RULE); items written before category words
(mnemo_text.categories) get theirs.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from ingestion_app.services.reindex import memory_reindex


class Command(BaseCommand):
    help = "Re-index stored memory into passages with exchange keys and provenance."

    def add_arguments(self, parser):
        parser.add_argument("--user", default=None, help="only this user's memory")

    def handle(self, *args, user, **options):
        user_id = None
        if user:
            try:
                user_id = get_user_model().objects.get(username=user).pk
            except get_user_model().DoesNotExist as exc:
                raise CommandError(f"No user named {user!r}.") from exc
        outcome = memory_reindex(user_id=user_id)
        self.stdout.write(
            f"Sessions: {outcome.sessions}, messages re-indexed: {outcome.messages_reindexed}, "
            f"items removed: {outcome.items_removed}, items labelled: {outcome.items_labelled}, "
            f"import passages added: {outcome.import_passages}, "
            f"items given category words: {outcome.items_categorized}"
        )
