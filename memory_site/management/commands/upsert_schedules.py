"""Create or update Mnemo's periodic tasks (django-q2 schedules) by dotted path. Idempotent."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django_q.models import Schedule

from memory_site.task_paths import (
    CLOSE_STALE_SESSIONS_TASK,
    REQUEUE_ABANDONED_IMPORTS_TASK,
    RETENTION_TASK,
)

# name -> (dotted function path, schedule type, minutes)
SCHEDULES = {
    "mnemo-close-stale-sessions": (CLOSE_STALE_SESSIONS_TASK, Schedule.MINUTES, 5),
    "mnemo-requeue-abandoned-imports": (REQUEUE_ABANDONED_IMPORTS_TASK, Schedule.MINUTES, 1),
    "mnemo-retention": (RETENTION_TASK, Schedule.DAILY, None),
}


class Command(BaseCommand):
    help = "Upsert the periodic tasks (stale-session close, abandoned imports, retention)."

    def handle(self, *args, **options):
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
