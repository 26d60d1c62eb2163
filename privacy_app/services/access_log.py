"""The access log's writer: one row per staff page view of another user's data.

The `AccessLog` model (`privacy_app.models`, with the `privacy_app.browse_all_memories`
permission) is written only here.
"""

from __future__ import annotations

from privacy_app.models import AccessLog


def access_log_record(*, request, target_user, object_type: str, object_id: str = "") -> None:
    """Record one staff view of `target_user`'s data; a user's own pages are not logged."""
    if target_user.pk == request.user.pk:
        return
    AccessLog.objects.create(
        viewer=request.user,
        viewer_username=request.user.get_username(),
        target_user=target_user,
        object_type=object_type,
        object_id=str(object_id)[:64],
        path=request.get_full_path()[:500],
    )
