"""Settings for the test suite: the same embedded PostgreSQL, tasks run synchronously."""

from __future__ import annotations

from memory_site.settings import *  # noqa: F403
from memory_site.settings import DATABASE_URL, DATABASES, Q_CLUSTER

Q_CLUSTER = {**Q_CLUSTER, "sync": True}
# Tests that script the fake model or count its requests must not see the background entity
# calls; the entity tests turn them on.
MNEMO_ENTITY_TASKS = False
# The after-message items are embedded in the request, as with MNEMO_EMBED_AFTER_RESPONSE=0: a
# test's transaction never commits, so on-commit work never runs. The tests of the deferred path
# (tests/ingestion_app/test_deferred_embeddings.py) turn it on with transactional_db.
MNEMO_EMBED_AFTER_RESPONSE = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The embedded server keeps one connection per request under test, as before the web
# processes' pool: tests hold connections from many threads at once. `make test-external`
# runs the database tests through the pool (DATABASE_URL).
if not DATABASE_URL:
    DATABASES["default"]["OPTIONS"].pop("pool", None)
