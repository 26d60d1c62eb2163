"""Admin screens, one module per concept (Django autodiscovers this package)."""

from context_app.admin import (
    context,  # noqa: F401
    rollups,  # noqa: F401
    session_summaries,  # noqa: F401
)
