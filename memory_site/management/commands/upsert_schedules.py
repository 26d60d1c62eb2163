"""Create or update Mnemo's periodic tasks (django-q2 schedules) by dotted path. Idempotent."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django_q.models import Schedule

from memory_site.task_paths import (
    CLOSE_STALE_SESSIONS_TASK,
    EMBED_MISSING_TASK,
    IMPORTS_RESUME_TASK,
    JOBS_RESUME_TASK,
    RETENTION_TASK,
    WEBHOOKS_DUE_TASK,
)

# name -> (dotted function path, schedule type, minutes)
SCHEDULES = {
    "mnemo-close-stale-sessions": (CLOSE_STALE_SESSIONS_TASK, Schedule.MINUTES, 5),
    "mnemo-retention": (RETENTION_TASK, Schedule.DAILY, None),
    # Document ingests, session closes and chunk headers whose worker died (memory_site.leases).
    "mnemo-resume-abandoned-jobs": (JOBS_RESUME_TASK, Schedule.MINUTES, 1),
    # Imports and their entity and passage-vector backfills whose worker died.
    "mnemo-resume-abandoned-imports": (IMPORTS_RESUME_TASK, Schedule.MINUTES, 1),
    # Chat items left without a vector (embedding thread's process died, embedder failed).
    "mnemo-embed-missing": (EMBED_MISSING_TASK, Schedule.MINUTES, 1),
    "mnemo-webhooks-due": (WEBHOOKS_DUE_TASK, Schedule.MINUTES, 1),
}


# Schedules of earlier versions, deleted so no worker runs a task path that no longer exists.
RETIRED = ("mnemo-requeue-abandoned-imports",)


class Command(BaseCommand):
    help = (
        "Upsert the periodic tasks (stale-session close, retention, resuming abandoned jobs, "
        "embedding chat items left without a vector)."
    )

    def handle(self, *args, **options):
        Schedule.objects.filter(name__in=RETIRED).delete()
        for name, (func, schedule_type, minutes) in SCHEDULES.items():
            Schedule.objects.update_or_create(
                name=name,
                defaults={
                    "func": func,
                    "schedule_type": schedule_type,
                    "minutes": minutes,
                    "repeats": -1,
                },
            )
            self.stdout.write(f"schedule {name}: {func}")
