"""The entity graph's models leave ingestion_app for entities_app (see entities_app 0001):
state only, no table is dropped or renamed."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("ingestion_app", "0017_rows_kept_whole"),
        ("entities_app", "0001_entities_from_ingestion_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
        migrations.RemoveField(
            model_name='entity',
            name='user',
        ),
        migrations.RemoveField(
            model_name='entitymention',
            name='entity',
        ),
        migrations.RemoveField(
            model_name='entitymention',
            name='memory',
        ),
        migrations.RemoveField(
            model_name='entitymention',
            name='user',
        ),
        migrations.DeleteModel(
            name='CrossReference',
        ),
        migrations.DeleteModel(
            name='Entity',
        ),
        migrations.DeleteModel(
            name='EntityMention',
        ),
        ]),
    ]
