from django.apps import AppConfig


class EntitiesAppConfig(AppConfig):
    name = "entities_app"
    verbose_name = "Entities"

    def ready(self) -> None:
        """Extract the entities of every item the store writes (see ingestion_app.signals)."""
        from entities_app import receivers
        from ingestion_app.signals import memory_items_written

        memory_items_written.connect(
            receivers.memory_items_written_extract, dispatch_uid="entities_app.extract"
        )
