"""Trigram indexes for the queue's search (PostgreSQL only; SQLite scans, which is fine there).

The search filters `UPPER(col) LIKE UPPER('%term%')` (Django's icontains); a GIN index with
gin_trgm_ops on the same UPPER() expression lets PostgreSQL answer it from the index."""

from django.db import migrations

INDEXES = {
    "case_reference_trgm": "reference",
    "case_title_trgm": "title",
}


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, column in INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS {name} ON cases_case USING gin ((UPPER("{column}"::text)) gin_trgm_ops)'
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):

    dependencies = [
        ("cases", "0003_queue_indexes"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
