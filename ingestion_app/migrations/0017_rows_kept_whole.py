"""Keep each memory row whole in its page: no column moved to TOAST below 8 kB.

A search reads every scoped row's embedding (the vector leg's exact sort, the candidates'
similarity, the supersede pairs) and its metadata and content (the candidates' load). With the
default 2 kB target an average row (~4 kB: a 384-float embedding alone is 1.5 kB) had its
embedding moved to TOAST (pgvector stores vectors EXTERNAL), so each read cost a TOAST index
lookup and two more page reads. `toast_tuple_target` raises the size under which a row is
stored as it is; the embedding's storage MAIN keeps it in the row above it too (MAIN columns
leave the row last, only past a page). Rows stored before are rewritten in batches so they
take the new layout (an UPDATE keeps an unchanged value where it is: each column is given
again as a new value). The schema is unchanged; reversible.
"""

from django.db import migrations

BATCH = 5000

REWRITE_SQL = """
    UPDATE rag_store SET
        content = content || '', header = header || '', raw_content = raw_content || '',
        metadata = metadata || '{}'::jsonb, keyword_context = keyword_context || '',
        embedding_text = embedding_text || '', embedding = embedding::text::vector
    WHERE id >= %s AND id < %s
"""


def rows_rewrite(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id) FROM rag_store")
        low, high = cursor.fetchone()
        if low is None:
            return
        for start in range(low, high + 1, BATCH):
            cursor.execute(REWRITE_SQL, [start, start + BATCH])
        cursor.execute("ANALYZE rag_store")


class Migration(migrations.Migration):
    dependencies = [
        ("ingestion_app", "0016_imports_to_imports_app"),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE rag_store SET (toast_tuple_target = 8160);"
            " ALTER TABLE rag_store ALTER COLUMN embedding SET STORAGE MAIN;",
            reverse_sql="ALTER TABLE rag_store RESET (toast_tuple_target);"
            " ALTER TABLE rag_store ALTER COLUMN embedding SET STORAGE EXTERNAL;",
        ),
        migrations.RunPython(rows_rewrite, migrations.RunPython.noop),
    ]
