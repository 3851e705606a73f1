"""SQLite refuses changes to audit entries too, as PostgreSQL has since 0002.

Two triggers: one refuses every DELETE; the other every UPDATE except the sequencer's one-time
write of position, prev_hash and hash on a pending entry (all three NULL before, all three set
after, every other column unchanged). SQLite has no whole-row comparison in a trigger, so the
UPDATE trigger names each other column (`NEW.col IS OLD.col`: IS, so that NULLs compare
equal), listed from the model as this migration sees it. Therefore:

- a migration that adds a column to AuditEntry must drop and recreate this trigger with the
  new column list, or the column can be changed by an UPDATE that sequences the entry;
- a migration that makes SQLite rebuild the table (Django copies it into a new table for most
  AlterField and constraint changes) drops both triggers with the old table; it must create
  them again.

tests/audit/test_sequencer.py fails in either case. Flush (`manage.py flush`, the test runner
between transactional tests) empties tables with DELETE on SQLite; the project's SQLite backend
(casework/sqlite/base.py) drops and recreates the table's triggers around it, as PostgreSQL's
TRUNCATE passes its row triggers by.
"""

from django.db import migrations

SEQUENCING = ("position", "prev_hash", "hash")

_UPDATE_TRIGGER = """
CREATE TRIGGER audit_auditentry_append_only_update
BEFORE UPDATE ON audit_auditentry
FOR EACH ROW
WHEN NOT (
    OLD.position IS NULL AND OLD.prev_hash IS NULL AND OLD.hash IS NULL
    AND NEW.position IS NOT NULL AND NEW.prev_hash IS NOT NULL AND NEW.hash IS NOT NULL
    AND {unchanged}
)
BEGIN
    SELECT RAISE(ABORT, 'audit entries are append-only: UPDATE refused (only the sequencer''s one-time write of position and hashes is allowed)');
END
"""

_DELETE_TRIGGER = """
CREATE TRIGGER audit_auditentry_append_only_delete
BEFORE DELETE ON audit_auditentry
FOR EACH ROW
BEGIN
    SELECT RAISE(ABORT, 'audit entries are append-only: DELETE refused');
END
"""


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    quote = schema_editor.quote_name
    model = apps.get_model("audit", "AuditEntry")
    columns = [f.column for f in model._meta.concrete_fields if f.column not in SEQUENCING]
    unchanged = "\n    AND ".join(f"NEW.{quote(c)} IS OLD.{quote(c)}" for c in columns)
    schema_editor.execute(_UPDATE_TRIGGER.format(unchanged=unchanged), params=None)
    schema_editor.execute(_DELETE_TRIGGER, params=None)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    schema_editor.execute("DROP TRIGGER IF EXISTS audit_auditentry_append_only_update", params=None)
    schema_editor.execute("DROP TRIGGER IF EXISTS audit_auditentry_append_only_delete", params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0003_append_only_trigger_row_compare'),
    ]

    operations = [
        migrations.RunPython(create_triggers, drop_triggers),
    ]
