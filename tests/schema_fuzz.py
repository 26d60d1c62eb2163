"""A schema-driven fuzzer (schemathesis) over every operation of a running Mnemo server.

Shared by tests/memory_site/test_schema_fuzz.py (about 60 s, in the suite) and bench/faults.py
(longer runs for the figures in bench/reports/reliability.md). Each operation gets an equal share of the
time budget, half valid requests (positive) and half invalid ones (negative); every response is
checked: no 5xx, a documented status code and content type, a body that matches the schema.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


class _OutOfTime(Exception):
    """Ends an operation's run once its share of the time is spent."""


@dataclass
class FuzzReport:
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    operations: int = 0
    seconds: float = 0.0

    @property
    def server_errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if status >= 500)


def fuzz_api(
    base_url: str,
    *,
    token: str,
    seconds: float = 60.0,
    max_examples: int = 200,
    session: requests.Session | None = None,
) -> FuzzReport:
    """Fuzz every operation of the server at `base_url` as the user of `token`.

    Never raises for a failed check: failures are collected in the report (one line each).
    """
    schema = schemathesis.openapi.from_url(f"{base_url}/api/schema/?format=json")
    # The OpenAI-compatible /v1 surface streams through an async upstream client that only an
    # ASGI server can serve (production runs uvicorn; this live server is WSGI): it is driven
    # with the real openai SDK against uvicorn in tests/gateway_app instead.
    operations = [
        operation
        for operation in (result.ok() for result in schema.get_all_operations())
        if not operation.path.startswith("/v1/")
    ]
    report = FuzzReport(operations=len(operations))
    budget = seconds / (2 * max(1, len(operations)))
    headers = {"Authorization": f"Token {token}"}
    http = session or requests.Session()
    started = time.monotonic()
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz_operation(
                operation,
                mode,
                report=report,
                base_url=base_url,
                headers=headers,
                http=http,
                deadline=time.monotonic() + budget,
                max_examples=max_examples,
            )
    report.seconds = time.monotonic() - started
    return report


def _fuzz_operation(
    operation, mode, *, report, base_url, headers, http, deadline: float, max_examples: int
) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    def exercise(case):
        if time.monotonic() > deadline:
            raise _OutOfTime
        report.requests += 1
        try:
            response = case.call(base_url=base_url, session=http, headers=headers)
        except requests.RequestException as exc:
            report.failures.append(f"{case.method} {case.path}: no response ({exc})")
            return
        report.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (FailureGroup, AssertionError) as exc:
            first = str(exc).strip().splitlines()[:6]
            report.failures.append(
                f"{case.method} {case.formatted_path} -> {response.status_code}: "
                + " | ".join(first)
            )

    try:
        exercise()
    except _OutOfTime:
        pass
    except Unsatisfiable:
        pass  # nothing to make invalid (an operation without parameters or body)
