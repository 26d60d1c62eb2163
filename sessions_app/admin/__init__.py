"""Admin screens, one module per concept (Django autodiscovers this package)."""

from sessions_app.admin import (
    retention,  # noqa: F401
    sessions,  # noqa: F401
)
