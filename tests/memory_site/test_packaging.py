"""What an operator installs and reads: the runtime set apart from the tools, one lock, one
settings table behind `.env.example` and the docs, and a docs site that builds strictly."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from gateway_app.reference_docs import reference_stale
from memory_site.setting_table import TABLE

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
TOOLS = {"pytest", "playwright", "schemathesis", "hypothesis", "ruff", "mkdocs", "import-linter"}
EXPORT_ONLY = {"torch", "sentence-transformers", "transformers"}


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[normal(name)] = version.strip()
    return pins


def declared() -> list[Requirement]:
    project = PYPROJECT["project"]
    requirements = [*project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        requirements += extra
    requirements += PYPROJECT["dependency-groups"]["dev"]
    return [Requirement(text) for text in requirements]


def test_every_declared_package_is_pinned_the_same_in_the_lock():
    pins = lock()
    for requirement in declared():
        assert normal(requirement.name) in pins, f"{requirement.name} is not in the lock"
        assert requirement.specifier == f"=={pins[normal(requirement.name)]}", requirement


def test_this_environment_is_the_lock():
    """`make install` installs exactly the lock: nothing unpinned slipped in, nothing drifted."""
    pins = lock()
    ignored = {"pip", "setuptools", "wheel", "mnemo", "mnemo-client"}
    for dist in metadata.distributions():
        name = normal(dist.metadata["Name"])
        if name in ignored:
            continue
        assert name in pins, f"{name} is installed but not in requirements.txt"
        assert dist.version.split("+")[0] == pins[name], f"{name} {dist.version} != lock"


def closure(requirements: list[str]) -> set[str]:
    """Every distribution the requirements pull in, by their installed metadata."""
    seen: set[str] = set()
    todo = [Requirement(text) for text in requirements]
    while todo:
        requirement = todo.pop()
        name = normal(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(requirement.name) or []:
            child = Requirement(text)
            if child.marker is None or child.marker.evaluate({"extra": ""}):
                todo.append(child)
    return seen


def test_the_runtime_set_holds_no_test_tools_and_no_torch():
    runtime = closure(PYPROJECT["project"]["dependencies"])
    assert "django" in runtime and "onnxruntime" in runtime
    assert not (runtime & {normal(name) for name in TOOLS | EXPORT_ONLY}), runtime & (
        TOOLS | EXPORT_ONLY
    )
    assert PYPROJECT["project"]["scripts"]["mnemo"] == "memory_site.cli:main"


def test_the_image_installs_the_runtime_set_and_exports_in_a_build_stage():
    instructions = [
        line for line in (ROOT / "Dockerfile").read_text().splitlines() if not line.startswith("#")
    ]
    stages = "\n".join(instructions).split("\nFROM ")
    final = stages[-1]
    assert "pip install --no-cache-dir -c requirements.txt ." in final
    assert "torch" not in final and "[export]" not in final and "--group" not in final
    assert any("[export]" in stage and "onnx_export" in stage for stage in stages[:-1])
    assert "COPY --from=export" in final and "MNEMO_MODELS_DIR" in final


def setting_names_read() -> set[str]:
    """Names passed to `setting(...)` anywhere in the apps."""
    names = set()
    for path in ROOT.glob("*/**/*.py"):
        if path.parts[len(ROOT.parts)] in {".venv", "tests", "bench", "clients", "var"}:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "setting"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
    return names


def test_every_setting_in_the_table_is_read_and_every_read_is_in_the_table():
    # Read straight from the process environment by the library that honours it.
    read_elsewhere = {"PROMETHEUS_MULTIPROC_DIR"}
    assert setting_names_read() | read_elsewhere == set(TABLE)
    settings_source = (ROOT / "memory_site" / "settings.py").read_text()
    assert "os.environ" not in settings_source and "env_" not in settings_source


def test_an_unlisted_setting_cannot_be_read():
    from memory_site.setting_table import setting

    with pytest.raises(KeyError):
        setting("MNEMO_NOT_A_SETTING")


def test_env_example_and_the_reference_pages_are_generated_from_the_code():
    stale = reference_stale()
    assert not stale, f"run `manage.py docs_reference`: {stale}"


def test_the_docs_site_builds_in_strict_mode(tmp_path):
    """A broken link, a page missing from the nav or a bad anchor fails the build."""
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "settings" / "index.html").exists()
    assert (tmp_path / "site" / "tutorial" / "index.html").exists()


def test_the_readme_is_short_and_names_no_session_or_machine_path():
    """Nothing in it points at the machine it was written on: not the checkout's own place,
    not the home or temporary folder of whoever runs this."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert not re.search(r"\bsession \d+\b", readme, re.IGNORECASE)
    for machine_path in {ROOT.parent, Path.home(), Path(tempfile.gettempdir())}:
        assert f"{machine_path}/" not in readme
