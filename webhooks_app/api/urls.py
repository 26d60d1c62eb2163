from django.urls import path

from webhooks_app.api import views

urlpatterns = [
    path("webhooks", views.WebhookListApi.as_view(), name="webhooks"),
    path("webhooks/<uuid:endpoint_id>", views.WebhookDetailApi.as_view(), name="webhook"),
    path(
        "webhooks/<uuid:endpoint_id>/secret",
        views.WebhookSecretApi.as_view(),
        name="webhook-secret",
    ),
    path(
        "webhooks/<uuid:endpoint_id>/deliveries",
        views.WebhookDeliveriesApi.as_view(),
        name="webhook-deliveries",
    ),
]
