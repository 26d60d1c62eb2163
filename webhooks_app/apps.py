from django.apps import AppConfig


class WebhooksAppConfig(AppConfig):
    name = "webhooks_app"
    verbose_name = "Webhooks: events pushed to the apps that use Mnemo"

    def ready(self):
        from memory_site.metrics import scrape_gauges_register
        from webhooks_app.metrics import delivery_gauges

        scrape_gauges_register(delivery_gauges)
