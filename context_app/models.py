"""context_app models (summaries rollups, topics, context settings, injection log)."""
