"""The text toolkit is a library: every module imports without Django or the project's apps,
so the importer's workers, a benchmark or another service can use it as it is."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import mnemo_text

ROOT = Path(mnemo_text.__file__).resolve().parent.parent
# The project's packages, as the import contracts list them.
PROJECT_PACKAGES = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
) - {"mnemo_text"}


def test_every_module_of_the_toolkit_imports_without_django_or_an_app():
    modules = sorted(
        info.name for info in pkgutil.walk_packages(mnemo_text.__path__, prefix="mnemo_text.")
    )
    assert "mnemo_text.sentences" in modules and "mnemo_text.redaction.engine" in modules
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )

    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        check=True,
    )
    loaded = set(json.loads(result.stdout.strip().splitlines()[-1]))

    assert "django" not in loaded
    assert not loaded & PROJECT_PACKAGES
