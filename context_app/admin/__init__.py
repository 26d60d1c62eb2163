"""Admin screens, one module per concept (Django autodiscovers this package)."""

from context_app.admin import (
    access,  # noqa: F401
    context,  # noqa: F401
    privacy,  # noqa: F401
    rollups,  # noqa: F401
)
