"""The chat page: server-rendered shell and history; chat.js streams replies from the API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse

from context_app.selectors import context_settings_row
from context_app.services.context_pack import session_context_last
from privacy_app.selectors import refuse_other_user
from sessions_app.selectors import session_is_open
from web_app.display import session_label
from web_app.selectors import (
    CHAT_HISTORY_MESSAGES,
    chat_history,
    chat_session_for_owner,
    chat_sidebar_sessions,
)

HEARTBEAT_SECONDS = 30
# Why Commit to Memory is off on a chat that is no longer open (the page and chat.js show it).
COMMIT_CLOSED_REASON = (
    "Commit is off: this chat has ended, and its summary is saved to memory when it closes."
)


def _api(name: str, **kwargs) -> str:
    return reverse(name, kwargs=kwargs or None)


@login_required
def chat(request, session_id=None):
    """`/` starts a new chat (the session is opened on the first message); `/chat/<id>/`
    continues one of the caller's chats, or shows it read-only once it is closed. The chat is
    always the caller's own: `?user=<someone else>` is a 403 page."""
    refuse_other_user(request)
    session = None
    messages = []
    last_context = None
    if session_id is not None:
        session = chat_session_for_owner(user=request.user, session_id=session_id)
        messages = chat_history(session=session)
        last_context = session_context_last(session=session)
        session.first_message = next(
            (m.content_sanitized for m in messages if m.role == "user"), ""
        )
    is_open = session is None or session_is_open(session)
    context_settings = context_settings_row()
    sidebar = chat_sidebar_sessions(user=request.user)
    for item in sidebar:
        item.label = session_label(item, width=48)
    placeholder = "00000000-0000-0000-0000-000000000000"
    config = {
        "session_id": str(session.id) if session else None,
        "session_status": session.status if session else None,
        "history": [
            {"role": m.role, "content": m.content} for m in messages[-CHAT_HISTORY_MESSAGES:]
        ],
        "context": last_context,
        "verbose_logging": context_settings.verbose_logging,
        "min_user_turns": context_settings.min_user_turns,
        "commit_closed_reason": COMMIT_CLOSED_REASON,
        "heartbeat_seconds": HEARTBEAT_SECONDS,
        "history_limit": CHAT_HISTORY_MESSAGES,
        "urls": {
            "new": _api("chat-new"),
            "stream": _api("ai-chat-stream"),
            "heartbeat": _api("chat-heartbeat"),
            "visibility": _api("chat-visibility"),
            "close": _api("chat-close"),
            "commit": _api("memory-commit"),
            "context_template": _api("chat-session-context", session_id=placeholder).replace(
                placeholder, "__id__"
            ),
            "chat_template": reverse(
                "web:chat-session", kwargs={"session_id": placeholder}
            ).replace(placeholder, "__id__"),
            "memory_template": reverse("web:memory-detail", kwargs={"memory_id": 0}).replace(
                "/0/", "/__id__/"
            ),
        },
    }
    return render(
        request,
        "chat/chat.html",
        {
            "nav": "chat",
            "session": session,
            "session_title": session_label(session, width=80) if session else "New chat",
            "is_open": is_open,
            "commit_disabled_reason": "" if is_open else COMMIT_CLOSED_REASON,
            "messages_list": messages,
            "sidebar": sidebar,
            "chat_config": config,
            "context_settings": context_settings,
        },
    )
