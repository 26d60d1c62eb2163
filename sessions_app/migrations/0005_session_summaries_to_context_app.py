"""SessionSummary and SessionTag now belong to context_app (context_app 0010): removed from
sessions_app's state only; the tables and their rows stay."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0004_alter_sessionsummary_options"),
        ("context_app", "0010_session_summaries_from_sessions_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="SessionTag"),
                migrations.DeleteModel(name="SessionSummary"),
            ],
            database_operations=[],
        ),
    ]
