from django.urls import path

from sessions_app.api import usage, views

urlpatterns = [
    path("chat/new", views.SessionOpenApi.as_view(), name="chat-new"),
    path("chat/heartbeat", views.SessionHeartbeatApi.as_view(), name="chat-heartbeat"),
    path("chat/visibility", views.SessionVisibilityApi.as_view(), name="chat-visibility"),
    path("chat/close", views.SessionCloseApi.as_view(), name="chat-close"),
    path("chat/messages", views.MessageCreateApi.as_view(), name="chat-messages"),
    path("chat/sessions", views.SessionListApi.as_view(), name="chat-sessions"),
    path(
        "chat/sessions/<uuid:session_id>",
        views.SessionDetailApi.as_view(),
        name="chat-session-detail",
    ),
    path("usage", usage.UsageApi.as_view(), name="usage"),
]
