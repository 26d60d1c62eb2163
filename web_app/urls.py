"""Staff pages, included at `/` by memory_site/urls.py."""

from django.urls import path

from web_app.views import chat, entities, imports, memories, profile, sessions, settings_page

app_name = "web"

urlpatterns = [
    path("", chat.chat, name="chat"),
    path("chat/<uuid:session_id>/", chat.chat, name="chat-session"),
    path("memories/", memories.memory_list, name="memories"),
    path("memories/<int:memory_id>/", memories.memory_detail, name="memory-detail"),
    path("memories/<int:memory_id>/edit/", memories.memory_edit, name="memory-edit"),
    path("memories/<int:memory_id>/delete/", memories.memory_delete_view, name="memory-delete"),
    path("memories/sessions/", sessions.session_list, name="sessions"),
    path("memories/sessions/<uuid:session_id>/", sessions.session_detail, name="session-detail"),
    path("memories/entities/", entities.entity_list, name="entities"),
    path("memories/entities/<int:entity_id>/", entities.entity_detail, name="entity-detail"),
    path("memories/profile/", profile.profile_page, name="profile"),
    path("memories/profile/add/", profile.profile_entry_add_view, name="profile-add"),
    path(
        "memories/profile/<int:entry_id>/delete/",
        profile.profile_entry_delete_view,
        name="profile-delete",
    ),
    path("memories/imports/", imports.import_list, name="imports"),
    path("memories/imports/<uuid:import_id>/", imports.import_detail, name="import-detail"),
    path("settings/", settings_page.settings_page, name="settings"),
    path("settings/opt-outs/", settings_page.opt_out_add, name="opt-out-add"),
    path(
        "settings/opt-outs/<int:opt_out_id>/remove/",
        settings_page.opt_out_remove,
        name="opt-out-remove",
    ),
    path("settings/topic-overrides/", settings_page.override_add, name="override-add"),
    path(
        "settings/topic-overrides/<int:override_id>/remove/",
        settings_page.override_remove,
        name="override-remove",
    ),
]
