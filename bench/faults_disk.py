"""A real full disk under the upload folder: the figures of bench/reports/reliability.md's disk-full
section. Called by bench/faults.py (``--disk-full``); needs root (it mounts a tmpfs).

A tmpfs of ``size_mib`` is mounted and uvicorn started with ``MNEMO_UPLOAD_DIR`` on it (tasks
queued, no worker: only the upload path is measured). Then, without restarting the server:

1. an export bigger than the whole filesystem -> 507 ``storage_full`` with Retry-After, no
   import job, nothing left on the filesystem;
2. the filesystem filled to the last byte by a ballast file: a small export and a document
   -> 507 each, nothing left;
3. the ballast deleted: the same small export, again and again until it is accepted (202) ->
   the recovery time from the moment space was freed, and how many 507s came in between;
4. the tmpfs unmounted (uploads fall back to the directory on the main disk): accepted again.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import requests

BALLAST_BLOCK = 256 * 1024


def _files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


def _fill(path: Path) -> int:
    """Write a ballast file until the filesystem refuses; returns the bytes written."""
    written = 0
    block = b"\0" * BALLAST_BLOCK
    with open(path, "wb", buffering=0) as handle:
        while True:
            try:
                written += handle.write(block)
            except OSError:
                break
        for size in (4096, 512, 1):  # the last partial block
            while True:
                try:
                    written += handle.write(block[:size])
                except OSError:
                    break
    return written


def run_disk_full(env: dict, port: int, data_dir: Path, *, size_mib: int = 8) -> None:
    from bench.faults import make_token, start_server
    from bench.import_bench import generate_export
    from imports_app.models import ImportJob
    from ingestion_app.models import DocumentIngestJob

    work = data_dir / "disk-full"
    mount = work / "uploads"
    mount.mkdir(parents=True, exist_ok=True)
    small, big = work / "small.json", work / "big.json"
    if not small.exists():
        generate_export(small, 512 * 1024)
    if not big.exists():
        generate_export(big, (size_mib + 4) * 1024 * 1024)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(mount)], check=True
    )
    mounted = True
    token = make_token("disk-full-bench")
    headers = {"Authorization": f"Token {token}"}
    base_url = f"http://127.0.0.1:{port}"
    server = start_server({**env, "MNEMO_UPLOAD_DIR": str(mount), "MNEMO_TASKS_SYNC": "0"}, port)

    def upload(path: Path) -> requests.Response:
        with open(path, "rb") as handle:
            return requests.post(
                f"{base_url}/api/v1/imports",
                headers=headers,
                files={"files": ("conversations.json", handle)},
                timeout=300,
            )

    def jobs() -> tuple[int, int]:
        return (
            ImportJob.objects.filter(user__username="disk-full-bench").count(),
            DocumentIngestJob.objects.filter(user__username="disk-full-bench").count(),
        )

    try:
        print(f"disk full: tmpfs of {size_mib} MiB on the upload folder, load {os.getloadavg()}")
        before = jobs()
        response = upload(big)
        print(
            f"  {big.stat().st_size / 2**20:.1f} MiB export: {response.status_code} "
            f"{response.json().get('error', {}).get('code')}, Retry-After "
            f"{response.headers.get('Retry-After')!r}; files left {len(_files_under(mount))}; "
            f"new jobs {'yes' if jobs() != before else 'none'}"
        )
        ballast = mount / "ballast"
        filled = _fill(ballast)
        response = upload(small)
        document = requests.post(
            f"{base_url}/api/v1/knowledge/ingest",
            headers=headers,
            files={"file": ("notes.txt", b"Tide tables for April.\n" * 2000, "text/plain")},
            timeout=60,
        )
        left = [p for p in _files_under(mount) if p != ballast]
        print(
            f"  filesystem filled ({filled / 2**20:.1f} MiB ballast): "
            f"{small.stat().st_size / 2**10:.0f} KiB export {response.status_code} "
            f"{response.json().get('error', {}).get('code')}, document {document.status_code} "
            f"{document.json().get('error', {}).get('code')}; files left {len(left)}; "
            f"new jobs {'yes' if jobs() != before else 'none'}"
        )
        freed_at = time.monotonic()
        ballast.unlink()
        refused = 0
        while True:
            response = upload(small)
            if response.status_code == 202:
                break
            refused += 1
            if time.monotonic() - freed_at > 60:
                raise SystemExit(f"no upload accepted 60 s after space was freed: {response}")
        print(
            f"  ballast deleted: next upload {response.status_code} "
            f"{time.monotonic() - freed_at:.2f} s after space was freed "
            f"({refused} refused in between), server pid {server.pid} not restarted"
        )
        subprocess.run(["umount", str(mount)], check=True)
        mounted = False
        unmounted_at = time.monotonic()
        response = upload(small)
        print(
            f"  tmpfs unmounted: next upload {response.status_code} "
            f"{time.monotonic() - unmounted_at:.2f} s later (upload folder on the main disk), "
            f"server alive {server.poll() is None}, load {os.getloadavg()}"
        )
    finally:
        server.terminate()
        server.wait(timeout=15)
        if mounted:
            subprocess.run(["umount", "-l", str(mount)], check=False)
