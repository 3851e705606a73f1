"""Indexes that cost every write and serve no read (issue 29: PostgreSQL's share of a run).

On PostgreSQL, Django gives every indexed or unique CharField a second index with
varchar_pattern_ops, for LIKE 'prefix%' lookups. No query of ours filters those columns by
prefix (searches go through the trigram indexes or exact matches), so those second indexes are
only written: on each INSERT and on each UPDATE that moves the row (a status or a sequencer's
hash). `pattern_ops_drop` is the migration operation that removes them; it does nothing on
SQLite, which never had them. Reversing it creates them again.
"""

from __future__ import annotations

from django.db import migrations


def pattern_ops_drop(*indexes: tuple[str, str, str]) -> migrations.RunPython:
    """indexes: (index name, table, column) of Django's `_like` indexes to drop."""

    def forwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for name, _table, _column in indexes:
                schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')

    def backwards(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for name, table, column in indexes:
                schema_editor.execute(
                    f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" ("{column}" varchar_pattern_ops)')

    return migrations.RunPython(forwards, backwards, elidable=False)
