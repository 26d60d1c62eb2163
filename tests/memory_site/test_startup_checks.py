"""A hook or task path that does not import stops start-up with an error naming it."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from memory_site import checks
from memory_site.task_paths import TASK_PATHS


def test_the_configured_hooks_and_tasks_all_import():
    assert checks.dotted_paths_check() == []


def test_a_misspelt_after_message_hook_stops_manage_py_check(settings):
    bad = "ingestion_app.services.indexing.message_item_index"
    settings.MNEMO_AFTER_MESSAGE_HOOKS = [*settings.MNEMO_AFTER_MESSAGE_HOOKS, bad]

    errors = checks.dotted_paths_check()
    assert [(error.id, bad in error.msg) for error in errors] == [("mnemo.E001", True)]
    with pytest.raises(SystemCheckError, match="message_item_index"):
        call_command("check")


@pytest.mark.parametrize(
    "bad", ["context_app.tasks.session_close_tsk", "no_such_app.tasks.session_close_task"]
)
def test_a_bad_task_path_stops_manage_py_check(monkeypatch, bad):
    monkeypatch.setattr(checks, "TASK_PATHS", (*TASK_PATHS, bad))

    errors = checks.dotted_paths_check()
    assert [(error.id, bad in error.msg) for error in errors] == [("mnemo.E002", True)]
    with pytest.raises(SystemCheckError, match=bad.replace(".", r"\.")):
        call_command("check")


def test_a_path_to_something_not_callable_is_an_error(settings):
    settings.MNEMO_AFTER_MESSAGE_HOOKS = ["memory_site.task_paths.TASK_PATHS"]

    errors = checks.dotted_paths_check()
    assert [error.id for error in errors] == ["mnemo.E001"]
    assert "not callable" in errors[0].msg
