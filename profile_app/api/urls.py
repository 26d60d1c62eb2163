from django.urls import path

from profile_app.api import views

urlpatterns = [
    path("profile", views.ProfileApi.as_view(), name="profile"),
    path("profile/entries", views.ProfileEntriesApi.as_view(), name="profile-entries"),
    path(
        "profile/entries/<int:entry_id>",
        views.ProfileEntryDetailApi.as_view(),
        name="profile-entry",
    ),
    path(
        "profile/entries/<int:entry_id>/history",
        views.ProfileEntryHistoryApi.as_view(),
        name="profile-entry-history",
    ),
]
