"""Admin screens, one module per concept (Django autodiscovers this package)."""

from context_app.admin import privacy  # noqa: F401
