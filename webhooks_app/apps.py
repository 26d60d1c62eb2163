from django.apps import AppConfig


class WebhooksAppConfig(AppConfig):
    name = "webhooks_app"
    verbose_name = "Webhooks: events pushed to the apps that use Mnemo"
