from django.apps import AppConfig


class ProfileAppConfig(AppConfig):
    name = "profile_app"
    verbose_name = "Profile: standing instructions, preferences and who the user is"
