"""Write a session's raw log in the reference's Markdown format (one entry per turn).

    python manage.py export_session_log SESSION_ID [--output PATH] [--sanitized]

Each entry is ``---``, ``**Timestamp:**`` (ISO 8601, UTC), ``**Model:**``, ``**Turn:**`` (the
user's ordinal message number, the pair number of the session's inline chunks), ``**User:**``
and ``**Assistant:**`` blocks with the full text. The file reads back with the importer's local
session-log parser. Operators only: by default the original (decrypted) text is written, as the
raw log is the audit trail; ``--sanitized`` writes the redacted copies instead.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from sessions_app.models import ChatSession, Message


@dataclass
class _Entry:
    turn: int
    at: datetime
    user: str = ""
    replies: list[str] = field(default_factory=list)
    model: str = ""


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def session_log_entries(*, session: ChatSession, sanitized: bool = False) -> list[_Entry]:
    """The session's turns: each user message opens one, the replies that follow join it."""
    entries: list[_Entry] = []
    turn = 0
    messages = Message.objects.filter(session=session).exclude(role=Message.Role.SYSTEM)
    for message in messages.order_by("id"):
        text = message.content_sanitized if sanitized else message.content
        if message.role == Message.Role.USER:
            turn += 1
            entries.append(_Entry(turn=turn, at=message.created_at, user=text))
            continue
        if not entries:
            # The assistant spoke first (a greeting): a turn 0 with no user prompt.
            entries.append(_Entry(turn=0, at=message.created_at))
        entries[-1].replies.append(text)
        entries[-1].model = message.model or entries[-1].model
    return entries


def render_session_log(entries: list[_Entry]) -> str:
    blocks = [
        "\n".join(
            [
                "---",
                f"**Timestamp:** {_iso(entry.at)}",
                f"**Model:** {entry.model or 'unknown'}",
                f"**Turn:** {entry.turn}",
                "**User:**",
                entry.user.strip("\n"),
                "**Assistant:**",
                "\n\n".join(reply.strip("\n") for reply in entry.replies),
            ]
        )
        for entry in entries
    ]
    return "\n\n".join(blocks) + ("\n" if blocks else "")


class Command(BaseCommand):
    help = "Write a session's raw log (Timestamp / Model / Turn / User / Assistant blocks)."

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="the session to write out")
        parser.add_argument(
            "--output",
            "-o",
            default="-",
            help="File to write, or a directory (writes <session-id>.md in it); '-' = stdout.",
        )
        parser.add_argument(
            "--sanitized",
            action="store_true",
            help="Write the PII-redacted copies instead of the original text.",
        )

    def handle(self, *args, session_id: str, output: str, sanitized: bool, **options):
        try:
            session = ChatSession.objects.get(id=uuid.UUID(session_id))
        except (ValueError, ChatSession.DoesNotExist) as exc:
            raise CommandError(f"No session {session_id}.") from exc
        text = render_session_log(session_log_entries(session=session, sanitized=sanitized))
        if output == "-":
            self.stdout.write(text, ending="")
            return
        path = Path(output)
        if path.is_dir():
            path = path / f"{session.id}.md"
        path.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {path}")
