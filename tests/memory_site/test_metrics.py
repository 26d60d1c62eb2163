"""GET /metrics: Prometheus text for an authorised scraper only; request, search, pack and
embedding metrics move when the service works; the queues are read at scrape time."""

from __future__ import annotations

import re

import httpx
import pytest
from django.utils import timezone

from tests.factories import add_message, open_session
from webhooks_app.models import WebhookDelivery, WebhookEndpoint
from webhooks_app.services.deliveries import deliveries_due_send
from webhooks_app.services.endpoints import new_secret
from webhooks_app.services.events import event_emit

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "scrape-token-for-tests"


def sample(text: str, name: str, **labels) -> float:
    """The value of the series `name` with exactly these labels (0 when absent)."""
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if found == {key: str(value) for key, value in labels.items()}:
            return float(match.group(3))
    return 0.0


def scrape(live_url) -> str:
    response = httpx.get(f"{live_url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


def test_metrics_refuse_a_scrape_without_the_token(live_url, settings):
    settings.MNEMO_METRICS_TOKEN = TOKEN
    assert httpx.get(f"{live_url}/metrics").status_code == 401
    wrong = httpx.get(f"{live_url}/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    settings.MNEMO_METRICS_TOKEN = ""
    assert (
        httpx.get(f"{live_url}/metrics", headers={"Authorization": "Bearer x"}).status_code == 401
    )


def test_metrics_move_with_requests_searches_and_packs(live_url, settings, user, fake_embedder):
    from rest_framework.authtoken.models import Token

    settings.MNEMO_METRICS_TOKEN = TOKEN
    key = Token.objects.get_or_create(user=user)[0].key
    session = open_session(user)
    add_message(session, "user", "I keep three beehives behind the barn.")
    before = scrape(live_url)
    route = "/api/v1/memory/search"
    for _ in range(3):
        response = httpx.post(
            f"{live_url}{route}",
            json={"query": "beehives"},
            headers={"Authorization": f"Token {key}"},
        )
        assert response.status_code == 200
    after = scrape(live_url)

    labels = {"route": route, "method": "POST", "status": "200"}
    assert (
        sample(after, "mnemo_http_requests_total", **labels)
        == sample(before, "mnemo_http_requests_total", **labels) + 3
    )
    count = "mnemo_http_request_duration_seconds_count"
    assert sample(after, count, route=route, method="POST") >= 3
    assert (
        sample(after, "mnemo_search_duration_seconds_count", mode="hybrid")
        >= sample(before, "mnemo_search_duration_seconds_count", mode="hybrid") + 3
    )
    assert sample(after, "mnemo_embedded_texts_total", backend="openai") > 0
    assert "mnemo_memories_without_vector" in after and "mnemo_tasks_failed" in after
    # An unknown path is one series, whatever the path.
    httpx.get(f"{live_url}/no/such/page/{'x' * 20}")
    assert 'route="other"' in scrape(live_url)


def test_webhook_outcomes_and_pending_deliveries_are_counted(live_url, settings, user):
    settings.MNEMO_METRICS_TOKEN = TOKEN
    WebhookEndpoint.objects.create(user=user, url="http://127.0.0.1:9/", secret=new_secret())
    event_emit(user_id=user.id, event="import.failed", data={"import_id": "x"})
    before = scrape(live_url)
    assert sample(before, "mnemo_webhook_deliveries_pending") == 1
    WebhookDelivery.objects.update(next_attempt_at=timezone.now())  # its retry is due
    deliveries_due_send()
    after = scrape(live_url)
    labels = {"event": "import.failed", "outcome": "retry"}
    assert sample(after, "mnemo_webhook_attempts_total", **labels) == (
        sample(before, "mnemo_webhook_attempts_total", **labels) + 1
    )
    assert sample(after, "mnemo_webhook_attempt_duration_seconds_count") >= 1


INCREMENT = """
import django
django.setup()
from memory_site.metrics import EMBEDDED_TEXTS
EMBEDDED_TEXTS.labels("onnx").inc(5)
"""
SCRAPE = """
import django
django.setup()
from memory_site.metrics import metrics_text
import sys
sys.stdout.write(metrics_text().decode())
"""


def test_a_scrape_sums_every_process_in_multiprocess_mode(tmp_path):
    """What `serve` sets up: web and task workers each write their samples to
    PROMETHEUS_MULTIPROC_DIR; a scrape in any of them adds them up."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):
        subprocess.run(
            [sys.executable, "-c", INCREMENT], cwd=root, env=env, check=True, timeout=120
        )
    scraped = subprocess.run(
        [sys.executable, "-c", SCRAPE],
        cwd=root,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    ).stdout
    assert sample(scraped, "mnemo_embedded_texts_total", backend="onnx") == 10


def test_each_serve_run_gets_its_own_sample_folder(tmp_path):
    """A run's samples are never summed with a previous run's, and two `serve` commands on one
    data folder keep theirs apart."""
    import os
    import subprocess

    from memory_site.management.commands.serve import _metrics_dir

    ended = subprocess.Popen(["true"])
    ended.wait()
    stale = tmp_path / "metrics" / str(ended.pid)
    (stale / "counter_1.db").parent.mkdir(parents=True)
    (stale / "counter_1.db").write_bytes(b"old")
    alive = tmp_path / "metrics" / "1"  # pid 1 is always running: another serve
    alive.mkdir()

    mine = _metrics_dir(tmp_path)

    assert mine == tmp_path / "metrics" / str(os.getpid()) and list(mine.iterdir()) == []
    assert not stale.exists() and alive.exists()
