"""Entity, EntityMention and CrossReference move from ingestion_app to entities_app, which
owns the entity graph: state only.

The tables (`entities`, `entity_mentions`, `cross_references`) and their rows stay as they
are. The models' content types are relabelled so admin permissions and log entries follow.
Reversible: going back relabels them and hands the models back to ingestion_app.
"""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.db.models.deletion
import django.utils.timezone
import pgvector.django.vector
from django.conf import settings
from django.db import migrations, models


MODELS = ("entity", "entitymention", "crossreference")


def content_types_relabel(apps, *, old: str, new: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_types.objects.filter(app_label=new, model=model).exists():
            content_types.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor):
    content_types_relabel(apps, old="ingestion_app", new="entities_app")


def backwards(apps, schema_editor):
    content_types_relabel(apps, old="entities_app", new="ingestion_app")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("ingestion_app", "0017_rows_kept_whole"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
        migrations.CreateModel(
            name='Entity',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('app_id', models.CharField(default='default', max_length=64)),
                ('name', models.CharField(max_length=200)),
                ('normalized_name', models.CharField(max_length=200)),
                ('aliases', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=200), blank=True, default=list, size=None)),
                ('type', models.CharField(choices=[('person', 'Person'), ('place', 'Place'), ('organization', 'Organization'), ('project', 'Project'), ('pet', 'Pet'), ('product', 'Product'), ('event', 'Event'), ('concept', 'Concept'), ('other', 'Other')], default='other', max_length=16)),
                ('description', models.TextField(blank=True, default='')),
                ('description_history', models.JSONField(blank=True, default=list)),
                ('mention_count', models.PositiveIntegerField(default=0)),
                ('first_mentioned_at', models.DateTimeField(blank=True, null=True)),
                ('last_mentioned_at', models.DateTimeField(blank=True, null=True)),
                ('embedding', pgvector.django.vector.VectorField(blank=True, dimensions=384, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entities', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'entities',
                'db_table': 'entities',
                'ordering': ['-mention_count', 'name'],
            },
        ),
        migrations.CreateModel(
            name='EntityMention',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('kind', models.CharField(choices=[('text', 'Text'), ('speaker', 'Speaker')], default='text', max_length=8)),
                ('sentence', models.TextField(blank=True, default='')),
                ('start', models.PositiveIntegerField(blank=True, null=True)),
                ('end', models.PositiveIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('entity', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='mentions', to='entities_app.entity')),
                ('memory', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entity_mentions', to='ingestion_app.memoryitem')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entity_mentions', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'entity_mentions',
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='CrossReference',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('source_type', models.CharField(choices=[('item', 'Item'), ('entity', 'Entity')], max_length=8)),
                ('source_id', models.BigIntegerField()),
                ('target_type', models.CharField(choices=[('item', 'Item'), ('entity', 'Entity')], max_length=8)),
                ('target_id', models.BigIntegerField()),
                ('relationship', models.CharField(choices=[('mentions_same_entity', 'Mentions Same Entity'), ('updates', 'Updates'), ('follows_up', 'Follows Up'), ('related', 'Related')], max_length=24)),
                ('reason', models.TextField(blank=True, default='')),
                ('strength', models.PositiveIntegerField(default=1)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='cross_references', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'cross_references',
                'ordering': ['-strength', '-id'],
                'indexes': [models.Index(fields=['user', 'source_type', 'source_id'], name='xref_source'), models.Index(fields=['user', 'target_type', 'target_id'], name='xref_target')],
                'constraints': [models.UniqueConstraint(fields=('user', 'source_type', 'source_id', 'target_type', 'target_id', 'relationship'), name='cross_reference_unique')],
            },
        ),
        migrations.AddIndex(
            model_name='entity',
            index=models.Index(fields=['user', 'app_id', '-mention_count'], name='entity_user_mentions'),
        ),
        migrations.AddIndex(
            model_name='entity',
            index=models.Index(fields=['user', 'app_id', 'type'], name='entity_user_type'),
        ),
        migrations.AddIndex(
            model_name='entity',
            index=django.contrib.postgres.indexes.GinIndex(fields=['aliases'], name='entity_aliases'),
        ),
        migrations.AddConstraint(
            model_name='entity',
            constraint=models.UniqueConstraint(fields=('user', 'app_id', 'normalized_name'), name='entity_unique_name'),
        ),
        migrations.AddIndex(
            model_name='entitymention',
            index=models.Index(fields=['entity', '-memory'], name='mention_entity_recent'),
        ),
        migrations.AddIndex(
            model_name='entitymention',
            index=models.Index(fields=['memory'], name='mention_memory'),
        ),
        migrations.AddConstraint(
            model_name='entitymention',
            constraint=models.UniqueConstraint(fields=('entity', 'memory', 'kind'), name='entity_mention_unique'),
        ),
        ]),
        migrations.RunPython(forwards, backwards),
    ]
