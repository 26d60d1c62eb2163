"""GET /api/v1/usage?since=&until=: the caller's tokens and cost, totals and per model and day."""

from __future__ import annotations

import datetime as dt

import pytest

from sessions_app.models import UsageLog
from sessions_app.services.usage import usage_record

pytestmark = pytest.mark.django_db


def record(user, model, tokens_in, tokens_out, at: str):
    row = usage_record(user=user, model=model, tokens_in=tokens_in, tokens_out=tokens_out)
    UsageLog.objects.filter(id=row.id).update(created_at=dt.datetime.fromisoformat(at))
    return row


@pytest.fixture
def logs(user, other_user):
    record(user, "gpt-4o-mini", 1_000_000, 0, "2025-05-01T09:00:00+00:00")  # $0.15
    record(user, "gpt-4o-mini", 0, 1_000_000, "2025-05-01T23:59:00+00:00")  # $0.60
    record(user, "gpt-4o", 1000, 1000, "2025-05-02T10:00:00+00:00")  # $0.0125
    record(user, "text-embedding-3-small", 500, 0, "2025-05-03T08:00:00+00:00")  # $0.00001
    record(other_user, "gpt-4o", 9_999_999, 9_999_999, "2025-05-02T10:00:00+00:00")


def test_usage_totals_and_rows_for_the_caller_only(api, logs):
    response = api.get("/api/v1/usage")
    assert response.status_code == 200
    body = response.json()
    assert body["totals"] == {
        "calls": 4,
        "tokens_in": 1_001_500,
        "tokens_out": 1_001_000,
        "cost_usd": 0.76251,
    }
    assert body["rows"] == [
        {
            "day": "2025-05-01",
            "model": "gpt-4o-mini",
            "calls": 2,
            "tokens_in": 1_000_000,
            "tokens_out": 1_000_000,
            "cost_usd": 0.75,
        },
        {
            "day": "2025-05-02",
            "model": "gpt-4o",
            "calls": 1,
            "tokens_in": 1000,
            "tokens_out": 1000,
            "cost_usd": 0.0125,
        },
        {
            "day": "2025-05-03",
            "model": "text-embedding-3-small",
            "calls": 1,
            "tokens_in": 500,
            "tokens_out": 0,
            "cost_usd": 0.00001,
        },
    ]
    assert [m["model"] for m in body["by_model"]] == [
        "gpt-4o",
        "gpt-4o-mini",
        "text-embedding-3-small",
    ]


def test_since_and_until_dates_are_inclusive_days(api, logs):
    body = api.get("/api/v1/usage", {"since": "2025-05-02", "until": "2025-05-02"}).json()
    assert body["totals"]["calls"] == 1
    assert body["rows"][0]["model"] == "gpt-4o"
    assert body["since"] == "2025-05-02T00:00:00+00:00"
    assert body["until"] == "2025-05-03T00:00:00+00:00"


def test_datetimes_narrow_to_the_moment(api, logs):
    body = api.get(
        "/api/v1/usage", {"since": "2025-05-01T12:00:00Z", "until": "2025-05-02T09:00:00"}
    ).json()
    assert body["totals"]["calls"] == 1
    assert body["totals"]["tokens_out"] == 1_000_000


@pytest.mark.parametrize(
    ("query", "field", "code"),
    [
        ({"since": "yesterday"}, "since", "invalid_date"),
        ({"until": "2025-13-01"}, "until", "invalid_date"),
        ({"since": "2025-05-03", "until": "2025-05-01"}, "until", "invalid_range"),
    ],
)
def test_bad_dates_are_400_naming_the_field(api, logs, query, field, code):
    response = api.get("/api/v1/usage", query)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert response.json()["error"]["code"] == code


def test_no_usage_is_zero_not_an_error(api):
    body = api.get("/api/v1/usage").json()
    assert body["totals"] == {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
    assert body["rows"] == [] and body["by_model"] == []


def test_usage_needs_authentication(anon_api):
    assert anon_api.get("/api/v1/usage").status_code == 401
