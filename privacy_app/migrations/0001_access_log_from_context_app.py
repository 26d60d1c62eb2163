"""AccessLog moves from context_app to privacy_app, which owns the feature: state only.

The table (`context_app_accesslog`) and its rows stay as they are. The model's content type is
relabelled so the `browse_all_memories` permission, and every grant of it, follows the model.
Reversible: going back relabels the content type and hands the model back to context_app.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def content_type_relabel(apps, schema_editor, *, old: str, new: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    if content_types.objects.filter(app_label=new, model="accesslog").exists():
        return
    content_types.objects.filter(app_label=old, model="accesslog").update(app_label=new)


def forwards(apps, schema_editor):
    content_type_relabel(apps, schema_editor, old="context_app", new="privacy_app")


def backwards(apps, schema_editor):
    content_type_relabel(apps, schema_editor, old="privacy_app", new="context_app")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("context_app", "0008_context_settings_profile_cap"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AccessLog",
                    fields=[
                        ("id", models.BigAutoField(primary_key=True, serialize=False)),
                        ("viewer_username", models.CharField(max_length=150)),
                        ("object_type", models.CharField(max_length=32)),
                        ("object_id", models.CharField(blank=True, default="", max_length=64)),
                        ("path", models.CharField(max_length=500)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "target_user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="access_logs_as_target",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "viewer",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="access_logs_as_viewer",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "context_app_accesslog",
                        "ordering": ["-created_at", "-id"],
                        "permissions": [
                            (
                                "browse_all_memories",
                                "Can browse every user's memories, sessions and imports (each "
                                "view is logged)",
                            )
                        ],
                        "indexes": [
                            models.Index(
                                fields=["target_user", "-created_at"],
                                name="access_log_target_recent",
                            ),
                            models.Index(
                                fields=["viewer", "-created_at"], name="access_log_viewer_recent"
                            ),
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(forwards, backwards),
    ]
