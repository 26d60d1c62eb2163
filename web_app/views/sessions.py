"""Sessions in the memory browser: titles, summaries and tags, and one session's transcript."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render

from privacy_app.selectors import browse_target
from privacy_app.services.access_log import access_log_record
from web_app.display import session_label
from web_app.selectors import (
    chat_history,
    session_for_viewer,
    session_memories,
    session_memory_counts,
    sessions_overview,
)
from web_app.views.memories import viewing_context

PAGE_SIZE = 20


@login_required
def session_list(request):
    target = browse_target(request)
    page_obj = Paginator(sessions_overview(user=target), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    memory_count = session_memory_counts(user=target, sessions=page_obj.object_list)
    for session in page_obj.object_list:
        session.label = session_label(session, width=80)
        session.memory_count = memory_count.get(session.id, 0)
    access_log_record(request=request, target_user=target, object_type="session_list")
    return render(
        request,
        "memories/sessions.html",
        {
            "nav": "memories",
            "subnav": "sessions",
            "page_obj": page_obj,
            **viewing_context(request, target),
        },
    )


@login_required
def session_detail(request, session_id):
    """A session's summary, tags, transcript and memories. The owner reads the original text;
    staff browsing another user's session read the redacted copy."""
    browse_target(request)  # `?user=` naming someone else: 403 unless browsing staff
    session = session_for_viewer(viewer=request.user, session_id=session_id)
    is_owner = session.user_id == request.user.pk
    access_log_record(
        request=request, target_user=session.user, object_type="session", object_id=session.id
    )
    transcript = chat_history(session=session)
    session.first_message = next((m.content_sanitized for m in transcript if m.role == "user"), "")
    return render(
        request,
        "memories/session_detail.html",
        {
            "nav": "memories",
            "subnav": "sessions",
            "session": session,
            "label": session_label(session, width=120),
            "is_owner": is_owner,
            "summary": getattr(session, "summary", None),
            "tags": list(session.tags.all()),
            "transcript": [
                {
                    "role": m.role,
                    "text": m.content if is_owner else m.content_sanitized,
                    "created_at": m.created_at,
                    "id": m.id,
                    "incomplete": m.incomplete,
                }
                for m in transcript
            ],
            "memories": list(session_memories(session=session)),
        },
    )
