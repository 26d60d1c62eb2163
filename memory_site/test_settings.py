"""Settings for the test suite: the same embedded PostgreSQL, tasks run synchronously."""

from __future__ import annotations

from memory_site.settings import *  # noqa: F403
from memory_site.settings import Q_CLUSTER

Q_CLUSTER = {**Q_CLUSTER, "sync": True}
# Tests that script the fake model or count its requests must not see the background entity
# calls; the entity tests turn them on.
MNEMO_ENTITY_TASKS = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
