from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    # The database cache shared by the web process and the django-q2 worker (settings.CACHES).
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0002_retention_log")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
