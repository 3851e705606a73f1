"""The knowledge base's GIN index, on PostgreSQL only (SQLite ranks in Python)."""

from django.db import migrations


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS support_kbarticle_search_gin ON support_kbarticle USING gin (search_vector)")


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS support_kbarticle_search_gin")


class Migration(migrations.Migration):
    dependencies = [("support", "0001_initial")]

    operations = [migrations.RunPython(create_index, drop_index)]
