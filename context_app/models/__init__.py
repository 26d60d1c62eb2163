"""context_app models, one module per concept; import them all here for Django."""
