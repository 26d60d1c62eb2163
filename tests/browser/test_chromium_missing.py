"""Without Chromium the browser tests fail loudly under CI and skip (with the fix) elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import conftest


@pytest.fixture
def no_chromium(monkeypatch):
    monkeypatch.setattr(conftest, "CHROMIUM", Path("/nonexistent/chromium"))
    monkeypatch.setattr(conftest.shutil, "which", lambda name: None)


def test_fails_under_ci(no_chromium, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="make browser-deps"):
        conftest.chromium_or_skip()


def test_skips_elsewhere_with_the_reason(no_chromium, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
        conftest.chromium_or_skip()


def test_uses_debians_chromium_when_present(monkeypatch, tmp_path):
    binary = tmp_path / "chromium"
    binary.write_text("")
    monkeypatch.setattr(conftest, "CHROMIUM", binary)
    assert conftest.chromium_or_skip() == str(binary)
