from django.urls import path

from gateway_app.openai_compat import views

urlpatterns = [
    path("chat/completions", views.chat_completions, name="openai-chat-completions"),
    path("models", views.models, name="openai-models"),
    path("<path:rest>", views.not_found, name="openai-not-found"),
]
