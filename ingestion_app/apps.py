from django.apps import AppConfig


class IngestionAppConfig(AppConfig):
    name = "ingestion_app"
    verbose_name = "Memory store and ingestion"
