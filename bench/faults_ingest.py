"""Document ingest answers before reading the document: the figures of bench/reports/reliability.md's
ingest section. Called by bench/faults.py (``--ingest-pdf-pages N``).

A PDF of N text pages is generated; the bench times pypdf's extraction of it in this process
(what the request used to spend before answering), then POSTs it to uvicorn (tasks queued, no
worker) five times and times each 202. One of the queued jobs is then run here, as a worker
would (to ``done``, with its chunks), and a broken PDF is posted and run (``failed`` with
``document_unreadable`` and the reason).
"""

from __future__ import annotations

import os
import statistics
import time

import requests


def pdf_pages(pages: int, lines: int = 40, *, stamp: int = 0) -> bytes:
    """A PDF of ``pages`` pages of ``lines`` lines of Helvetica text each (``stamp`` in every
    line, so each bench run ingests a new document rather than finding the last one)."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for page in range(pages):
        text = (
            b"BT /F1 10 Tf 50 760 Td 12 TL "
            + b" ".join(
                b"(Page %d line %d of run %d: tides follow the moon, the harbour log notes each.) '"
                % (page, line, stamp)
                for line in range(lines)
            )
            + b" ET"
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>" % len(objects)
        )
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % kid for kid in kids),
        pages,
    )
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def run_ingest_latency(env: dict, port: int, *, pages: int) -> None:
    from django_q.conf import Conf

    from bench.faults import make_token, start_server
    from ingestion_app.parsers.documents import extract_text
    from ingestion_app.tasks import document_ingest_job_task

    data = pdf_pages(pages, stamp=int(time.time()))
    started = time.perf_counter()
    text = extract_text(data, kind="application/pdf")
    extraction = time.perf_counter() - started
    print(
        f"ingest: {pages}-page PDF, {len(data) / 2**10:.0f} KiB, {len(text):,} characters; "
        f"pypdf extraction alone {extraction:.2f} s, load {os.getloadavg()}"
    )
    headers = {"Authorization": f"Token {make_token('ingest-bench')}"}
    server = start_server({**env, "MNEMO_TASKS_SYNC": "0"}, port)
    base_url = f"http://127.0.0.1:{port}"

    def post(name: str, body: bytes) -> tuple[float, requests.Response]:
        began = time.perf_counter()
        response = requests.post(
            f"{base_url}/api/v1/knowledge/ingest",
            headers=headers,
            files={"file": (name, body, "application/pdf")},
            timeout=120,
        )
        return time.perf_counter() - began, response

    try:
        timings, jobs = [], []
        for attempt in range(5):
            seconds, response = post(f"harbour-{attempt}.pdf", data)
            timings.append(seconds)
            jobs.append(response.json())
            assert response.status_code == 202, response.text
        print(
            f"  POST: 202 x5 in {statistics.median(timings) * 1000:.0f} ms median, "
            f"{max(timings) * 1000:.0f} ms max ({', '.join(f'{t * 1000:.0f}' for t in timings)} "
            f"ms); status {jobs[0]['status']}, load {os.getloadavg()}"
        )
        began = time.perf_counter()
        Conf.SYNC = False  # the job's follow-up tasks are queued, as in a worker
        document_ingest_job_task(jobs[0]["job_id"])
        done = requests.get(base_url + jobs[0]["status_url"], headers=headers, timeout=60).json()
        print(
            f"  the job run as a worker runs it: {done['status']} in "
            f"{time.perf_counter() - began:.1f} s, {done['result']['chunk_count']} chunks, "
            f"new document {done['result']['created']}"
        )
        _, response = post("scan.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 500)
        document_ingest_job_task(response.json()["job_id"])
        broken = requests.get(
            base_url + response.json()["status_url"], headers=headers, timeout=60
        ).json()
        print(
            f"  broken PDF: POST {response.status_code}, job {broken['status']} "
            f"{broken['error']['code']}: {broken['error']['message'][:80]}"
        )
    finally:
        server.terminate()
        server.wait(timeout=15)
