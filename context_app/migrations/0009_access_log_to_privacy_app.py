"""AccessLog now belongs to privacy_app (privacy_app 0001): removed from context_app's state
only; the table and its rows stay."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("context_app", "0008_context_settings_profile_cap"),
        ("privacy_app", "0001_access_log_from_context_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AccessLog")],
            database_operations=[],
        ),
    ]
