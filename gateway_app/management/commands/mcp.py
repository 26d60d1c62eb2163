"""`python manage.py mcp --user USERNAME`: the MCP server over stdio, for desktop agents
(Claude Desktop, Cursor, Claude Code) that start their tools as subprocesses."""

from __future__ import annotations

import asyncio
import logging
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from gateway_app.mcp.server import mcp_server_build, stdio_user_resolver


class Command(BaseCommand):
    help = "Serve Mnemo's memory tools over MCP stdio as USERNAME (stdout carries only MCP)."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="The Mnemo user whose memory is served.")

    def handle(self, *args, user: str, **options):
        if not get_user_model().objects.filter(username=user, is_active=True).exists():
            raise CommandError(f"No active user named {user!r}.")
        # stdout is the protocol channel: every log line goes to stderr.
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
        server = mcp_server_build(resolve_user=stdio_user_resolver(user))
        asyncio.run(server.run_stdio_async())
