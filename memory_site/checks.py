"""Start-up checks: every dotted path Mnemo calls by string must import; the database is
reachable and has pgvector.

A typo in `MNEMO_AFTER_MESSAGE_HOOKS` would otherwise only be logged per message (new messages
silently stop becoming searchable), and a bad task path would fail in the worker, long after the
request that queued it. Registered by `MemorySiteConfig.ready`; run by `manage.py check`, every
management command that checks (`migrate`, `serve`) and the test suite's session fixture.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.utils.module_loading import import_string

from memory_site.task_paths import TASK_PATHS

TAG = "mnemo"


def _import_error(path: str) -> str | None:
    """Why `path` is not a callable, or None when it is."""
    try:
        target = import_string(path)
    except ImportError as exc:
        return str(exc)
    except Exception as exc:  # a module that raises while importing is just as broken
        return f"{type(exc).__name__}: {exc}"
    if not callable(target):
        return f"{path} is not callable"
    return None


@checks.register(TAG)
def dotted_paths_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """One Error per after-message hook (mnemo.E001) or task path (mnemo.E002) that fails."""
    errors: list[checks.CheckMessage] = []
    for path in settings.MNEMO_AFTER_MESSAGE_HOOKS:
        reason = _import_error(path)
        if reason:
            errors.append(
                checks.Error(
                    f"After-message hook {path!r} cannot be imported: {reason}",
                    hint="Fix the path in MNEMO_AFTER_MESSAGE_HOOKS (memory_site/settings.py).",
                    id="mnemo.E001",
                )
            )
    for path in TASK_PATHS:
        reason = _import_error(path)
        if reason:
            errors.append(
                checks.Error(
                    f"Task {path!r} cannot be imported: {reason}",
                    hint="Fix the path in memory_site/task_paths.py.",
                    id="mnemo.E002",
                )
            )
    return errors


@checks.register(checks.Tags.database)
def database_ready_check(app_configs=None, databases=None, **kwargs) -> list[checks.CheckMessage]:
    """A wrong DATABASE_URL or a server without pgvector stops `migrate` (and `check
    --database default`) with one clear line (mnemo.E003); database checks run only there."""
    from memory_site.database import database_preflight

    return [
        checks.Error(problem, id="mnemo.E003")
        for alias in databases or []
        for problem in database_preflight(alias)
    ]
