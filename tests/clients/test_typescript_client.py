"""The TypeScript client, built and tested by Node's own test runner against a live Mnemo.

Its types are generated from the schema: the committed `src/schema.ts` must be what
openapi-typescript makes of today's schema, and the committed `dist/` what `tsc` makes of the
sources (so `npm install ./clients/typescript` works without a build).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.clients.conftest import CLIENTS
from tests.gateway_app.conftest import token_for
from tests.ingestion_app.export_builders import chatgpt_linear, write_json

CLIENT = CLIENTS / "typescript"
NPM_TIMEOUT = 300


def run(*command: str, env: dict | None = None, timeout: float = NPM_TIMEOUT) -> str:
    result = subprocess.run(
        command,
        cwd=CLIENT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def node_modules():
    assert shutil.which("node") and shutil.which("npm"), "Node 20 and npm are needed"
    if not (CLIENT / "node_modules" / ".bin" / "tsc").exists():
        run("npm", "ci", "--no-audit", "--no-fund")
    return CLIENT / "node_modules"


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("schema") / "openapi.json"
    path.write_text(json.dumps(SchemaGenerator().get_schema(request=None, public=True)))
    return path


def test_the_generated_types_and_the_build_are_current(node_modules, schema_file, tmp_path):
    generated = tmp_path / "schema.ts"
    run(
        "npx", "openapi-typescript", str(schema_file), "--default-non-nullable", "false",
        "-o", str(generated),
    )  # fmt: skip
    assert generated.read_text() == (CLIENT / "src" / "schema.ts").read_text(), (
        "the API changed: run `npm run generate` in clients/typescript (see its README)"
    )
    out = tmp_path / "dist"
    run("npx", "tsc", "-p", ".", "--outDir", str(out))
    for built in sorted(out.iterdir()):
        assert built.read_text() == (CLIENT / "dist" / built.name).read_text(), (
            f"dist/{built.name} is stale: run `npm run build` in clients/typescript"
        )


@pytest.mark.django_db(transaction=True)
def test_node_tests_pass_against_a_live_mnemo(
    node_modules, schema_file, live_url, user, tmp_path, settings
):
    settings.MNEMO_UPLOAD_DIR = tmp_path / "uploads"
    export = write_json(
        tmp_path / "conversations.json",
        [chatgpt_linear("Balcony", [("I keep basil on the balcony.", "Water it daily.")])],
    )
    output = run(
        "node",
        "--test",
        "test/",
        env={
            "MNEMO_BASE_URL": live_url,
            "MNEMO_API_KEY": token_for(user),
            "MNEMO_SCHEMA": str(schema_file),
            "MNEMO_TEST_EXPORT": str(export),
        },
    )
    assert "# fail 0" in output and "# pass 5" in output, output
