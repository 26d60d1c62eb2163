"""ImportJob, ImportFile and ImportedConversation move from ingestion_app to imports_app, which
owns imports: state only.

The tables (`import_job`, `import_file`, `imported_conversation`) and their rows stay as they
are. The models' content types are relabelled so admin permissions and log entries follow.
Reversible: going back relabels them and hands the models back to ingestion_app.
"""

import uuid

import django.contrib.postgres.fields
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MODELS = ("importjob", "importfile", "importedconversation")


def content_types_relabel(apps, *, old: str, new: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_types.objects.filter(app_label=new, model=model).exists():
            content_types.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor):
    content_types_relabel(apps, old="ingestion_app", new="imports_app")


def backwards(apps, schema_editor):
    content_types_relabel(apps, old="imports_app", new="ingestion_app")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("ingestion_app", "0015_accent_folded_words"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
        migrations.CreateModel(
            name='ImportJob',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('app_id', models.CharField(default='default', max_length=64)),
                ('project_id', models.CharField(blank=True, default='', max_length=128)),
                ('agent_id', models.CharField(default='external', max_length=128)),
                ('origin', models.CharField(choices=[('api', 'Api'), ('cli', 'Cli'), ('admin', 'Admin')], default='api', max_length=8)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('partial', 'Partial'), ('failed', 'Failed')], default='queued', max_length=8)),
                ('upload_dir', models.CharField(blank=True, default='', max_length=500)),
                ('summary', models.JSONField(blank=True, default=dict)),
                ('error', models.TextField(blank=True, default='')),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='import_jobs', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'import_job',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='ImportFile',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('is_archive', models.BooleanField(default=False)),
                ('position', models.PositiveIntegerField(default=0)),
                ('name', models.CharField(max_length=1000)),
                ('path', models.CharField(blank=True, default='', max_length=1000)),
                ('size_bytes', models.BigIntegerField(default=0)),
                ('content_hash', models.CharField(blank=True, default='', max_length=64)),
                ('format', models.CharField(blank=True, default='', max_length=32)),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('imported', 'Imported'), ('skipped', 'Skipped'), ('failed', 'Failed')], default='pending', max_length=8)),
                ('conversations', models.PositiveIntegerField(default=0)),
                ('turn_pairs', models.PositiveIntegerField(default=0)),
                ('chunks_written', models.PositiveIntegerField(default=0)),
                ('duplicates_skipped', models.PositiveIntegerField(default=0)),
                ('chunk_ids', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=255), blank=True, default=list, size=None)),
                ('entities_extracted', models.PositiveIntegerField(default=0)),
                ('passage_vectors_pending', models.BooleanField(default=False)),
                ('passage_vectors_at', models.DateTimeField(blank=True, null=True)),
                ('error', models.TextField(blank=True, default='')),
                ('processed_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('archive', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='members', to='imports_app.importfile')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='import_files', to=settings.AUTH_USER_MODEL)),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='files', to='imports_app.importjob')),
            ],
            options={
                'db_table': 'import_file',
                'ordering': ['job', 'position', 'id'],
            },
        ),
        migrations.CreateModel(
            name='ImportedConversation',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('conversation_key', models.CharField(max_length=32)),
                ('platform', models.CharField(max_length=16)),
                ('conversation_id', models.CharField(blank=True, default='', max_length=255)),
                ('title', models.CharField(blank=True, default='', max_length=500)),
                ('pair_keys', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=40), blank=True, default=list, size=None)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='imported_conversations', to=settings.AUTH_USER_MODEL)),
                ('last_file', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='imports_app.importfile')),
            ],
            options={
                'db_table': 'imported_conversation',
                'constraints': [models.UniqueConstraint(fields=('user', 'conversation_key'), name='imported_conversation_unique')],
            },
        ),
        migrations.AddIndex(
            model_name='importjob',
            index=models.Index(fields=['user', '-created_at'], name='import_job_user_recent'),
        ),
        migrations.AddIndex(
            model_name='importfile',
            index=models.Index(fields=['user', 'content_hash'], name='import_file_user_hash'),
        ),
        ]),
        migrations.RunPython(forwards, backwards),
    ]
