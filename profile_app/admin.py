from django.contrib import admin

from profile_app.models import ProfileEntry


@admin.register(ProfileEntry)
class ProfileEntryAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "app_id", "kind", "status", "origin", "text", "stated_at")
    list_filter = ("kind", "status", "origin")
    search_fields = ("text", "user__username")
    raw_id_fields = ("user", "source_message", "source_memory", "superseded_by")
    readonly_fields = ("terms", "created_at", "updated_at")
