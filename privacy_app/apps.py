from django.apps import AppConfig


class PrivacyAppConfig(AppConfig):
    name = "privacy_app"
    verbose_name = "Privacy: export, erasure and the access log"
