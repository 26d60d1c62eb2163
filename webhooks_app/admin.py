from django.contrib import admin, messages

from webhooks_app.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks_app.services.endpoints import new_secret


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("url", "user", "enabled", "disabled_reason", "created_at")
    list_filter = ("enabled",)
    search_fields = ("url", "user__username")
    raw_id_fields = ("user",)
    # The secret is never shown again after it was created.
    exclude = ("secret",)
    readonly_fields = ("disabled_at", "created_at", "updated_at")

    def save_model(self, request, obj, form, change):
        """A new endpoint gets its signing secret here, shown once in the confirmation."""
        secret = None
        if not change:
            secret = obj.secret = new_secret()
        super().save_model(request, obj, form, change)
        if secret:
            messages.warning(
                request, f"Signing secret of {obj.url} (shown this once, keep it): {secret}"
            )


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    readonly_fields = ("attempted_at", "status_code", "latency_ms", "response_snippet", "error")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "event",
        "endpoint",
        "status",
        "attempts",
        "last_status_code",
        "created_at",
    )
    list_filter = ("status", "event")
    raw_id_fields = ("endpoint",)
    readonly_fields = ("body", "attempts", "last_status_code", "delivered_at", "created_at")
    inlines = [WebhookAttemptInline]

    def has_add_permission(self, request):
        return False
