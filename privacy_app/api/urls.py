from django.urls import path

from privacy_app.api import views

urlpatterns = [
    path("me/export", views.MeExportApi.as_view(), name="me-export"),
    path("me", views.MeEraseApi.as_view(), name="me"),
]
