from django.apps import AppConfig


class IngestionAppConfig(AppConfig):
    name = "ingestion_app"
    verbose_name = "Memory store and ingestion"

    def ready(self):
        from ingestion_app.metrics import store_gauges
        from memory_site.metrics import scrape_gauges_register

        scrape_gauges_register(store_gauges)
