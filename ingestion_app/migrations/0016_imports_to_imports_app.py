"""Imports' models leave ingestion_app for imports_app (see imports_app 0001): state only, no
table is dropped or renamed."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("ingestion_app", "0015_accent_folded_words"),
        ("imports_app", "0001_imports_from_ingestion_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
        migrations.RemoveField(
            model_name='importfile',
            name='archive',
        ),
        migrations.RemoveField(
            model_name='importfile',
            name='job',
        ),
        migrations.RemoveField(
            model_name='importfile',
            name='user',
        ),
        migrations.RemoveField(
            model_name='importjob',
            name='user',
        ),
        migrations.DeleteModel(
            name='ImportedConversation',
        ),
        migrations.DeleteModel(
            name='ImportFile',
        ),
        migrations.DeleteModel(
            name='ImportJob',
        ),
        ]),
    ]
