from django.urls import path

from context_app.api import chat, context, search

urlpatterns: list = [
    path("memory/search", search.MemorySearchApi.as_view(), name="memory-search"),
    path("memory/stats", search.MemoryStatsApi.as_view(), name="memory-stats"),
    path("ai/chat/stream", chat.ChatStreamApi.as_view(), name="ai-chat-stream"),
    path("summaries/context", context.ContextSnapshotApi.as_view(), name="summaries-context"),
    path(
        "chat/sessions/<uuid:session_id>/context",
        context.SessionContextApi.as_view(),
        name="chat-session-context",
    ),
]
