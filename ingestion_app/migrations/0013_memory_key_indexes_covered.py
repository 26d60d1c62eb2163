# The single-column indexes Django made for rag_store's two foreign keys are dropped: the
# composite indexes rag_user_hash and rag_session_source start with those keys and serve their
# lookups and cascades. Only the indexes go: Django's own AlterField would also drop and
# re-add (re-validate) both foreign-key constraints, a full scan under lock on a big table.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ingestion_app', '0012_embedding_missing_index'),
        ('sessions_app', '0004_alter_sessionsummary_options'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='memoryitem',
                    name='chat_session',
                    field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='memory_items', to='sessions_app.chatsession'),
                ),
                migrations.AlterField(
                    model_name='memoryitem',
                    name='user',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='memory_items', to=settings.AUTH_USER_MODEL),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "rag_store_chat_session_id_c09f809d"',
                    'CREATE INDEX IF NOT EXISTS "rag_store_chat_session_id_c09f809d" ON "rag_store" ("chat_session_id")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "rag_store_user_id_c29d9a38"',
                    'CREATE INDEX IF NOT EXISTS "rag_store_user_id_c29d9a38" ON "rag_store" ("user_id")',
                ),
            ],
        ),
    ]
