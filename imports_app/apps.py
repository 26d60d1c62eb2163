from django.apps import AppConfig


class ImportsAppConfig(AppConfig):
    name = "imports_app"
    verbose_name = "Chat-export imports"
