"""SessionSummary and SessionTag move from sessions_app to context_app, their writer: state
only. The tables (`sessions_app_sessionsummary`, `sessions_app_sessiontag`) and their rows stay;
the content types are relabelled so admin permissions follow the models. Reversible."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MODELS = ("sessionsummary", "sessiontag")


def content_types_relabel(apps, *, old: str, new: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_types.objects.filter(app_label=new, model=model).exists():
            content_types.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor):
    content_types_relabel(apps, old="sessions_app", new="context_app")


def backwards(apps, schema_editor):
    content_types_relabel(apps, old="context_app", new="sessions_app")


class Migration(migrations.Migration):
    dependencies = [
        ("context_app", "0009_access_log_to_privacy_app"),
        ("sessions_app", "0004_alter_sessionsummary_options"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SessionSummary",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("summary", models.TextField()),
                        ("token_estimate", models.PositiveIntegerField(default=0)),
                        ("model", models.CharField(blank=True, default="", max_length=128)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "session",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="summary",
                                to="sessions_app.chatsession",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="session_summaries",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "sessions_app_sessionsummary",
                        "verbose_name": "session summary",
                        "verbose_name_plural": "session summaries",
                    },
                ),
                migrations.CreateModel(
                    name="SessionTag",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("tag", models.CharField(max_length=64)),
                        ("confidence", models.FloatField()),
                        (
                            "session",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="tags",
                                to="sessions_app.chatsession",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="session_tags",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "sessions_app_sessiontag",
                        "ordering": ["-confidence"],
                        "indexes": [models.Index(fields=["user", "tag"], name="session_tag_user")],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("session", "tag"), name="session_tag_unique"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(forwards, backwards),
    ]
