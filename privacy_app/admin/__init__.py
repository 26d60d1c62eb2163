"""Admin screens: the user admin's export/erase actions, the access log."""

from privacy_app.admin import (
    access_log,  # noqa: F401
    users,  # noqa: F401
)
