from __future__ import annotations

import logging
import os

from django.apps import AppConfig

logger = logging.getLogger(__name__)


class MemorySiteConfig(AppConfig):
    name = "memory_site"
    verbose_name = "Mnemo"

    def ready(self):
        # Registers the start-up checks: hook and task paths, and (with --database) that the
        # database is reachable and has pgvector (see memory_site/checks.py).
        from memory_site import checks  # noqa: F401

        # `manage.py serve` sets this for the web server and the worker: load the local
        # embedding model at start-up (before the worker forks its children), so the first
        # request or task does not wait ~20 s for it.
        if os.environ.get("MNEMO_WARM_EMBEDDER") == "1":
            from django.conf import settings

            from memory_site.tokens import count_tokens
            from mnemo_text.words import verb_tables_load

            # The token counter's BPE table too: ~0.5 s that the first stored message would wait.
            count_tokens("warm up")
            # And the verb tables, which the first search would otherwise read inside the
            # pack's latency budget.
            verb_tables_load()
            if settings.EMBEDDING_PROVIDER == "local":
                from memory_site.providers import ProviderError, get_embedder

                try:
                    get_embedder().embed(["warm up"])
                except ProviderError:
                    # Already logged with its fix (no graphs and no torch to export them): the
                    # server still serves; memories are found by their words until then.
                    return
                logger.info("local embedding model loaded")
