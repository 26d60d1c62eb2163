from django.urls import path

from context_app.api import privacy

urlpatterns: list = [
    path("me/export", privacy.MeExportApi.as_view(), name="me-export"),
    path("me", privacy.MeEraseApi.as_view(), name="me"),
    path("usage", privacy.UsageApi.as_view(), name="usage"),
]
