"""Audit entries are written pending and linked later by a sequencer.

- `position` (the entry's place in the chain) is added; `prev_hash` and `hash` become NULL
  while an entry is pending.
- Entries that exist already were chained in id order: they get positions 1..N in that order.
- On PostgreSQL a trigger refuses every DELETE, and every UPDATE except the sequencer's
  one-time write of position, prev_hash and hash on a pending entry. There is deliberately no
  TRUNCATE trigger: the test runner empties tables with TRUNCATE between tests.
"""

from django.db import migrations, models

_NUMBER_EXISTING = """
UPDATE audit_auditentry SET position = numbered.n
FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM audit_auditentry) AS numbered
WHERE audit_auditentry.id = numbered.id
"""

# Comparing the rows as JSON minus the three sequencing columns covers every other column,
# including any added later, without listing them here.
JSON_COMPARE_FUNCTION = """
CREATE OR REPLACE FUNCTION audit_auditentry_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'audit entries are append-only: DELETE of entry % refused', OLD.id;
    END IF;
    IF OLD.position IS NULL AND OLD.prev_hash IS NULL AND OLD.hash IS NULL
       AND NEW.position IS NOT NULL AND NEW.prev_hash IS NOT NULL AND NEW.hash IS NOT NULL
       AND (to_jsonb(NEW) - 'position' - 'prev_hash' - 'hash')
           = (to_jsonb(OLD) - 'position' - 'prev_hash' - 'hash') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit entries are append-only: UPDATE of entry % refused '
                    '(only the sequencer''s one-time write of position and hashes is allowed)', OLD.id;
END;
$$;
"""
# 0003 replaces the function (a row comparison instead of JSON) and restores this one when reversed.
_CREATE_TRIGGER = JSON_COMPARE_FUNCTION + """
CREATE TRIGGER audit_auditentry_append_only
    BEFORE UPDATE OR DELETE ON audit_auditentry
    FOR EACH ROW EXECUTE FUNCTION audit_auditentry_append_only();
"""

_DROP_TRIGGER = """
DROP TRIGGER IF EXISTS audit_auditentry_append_only ON audit_auditentry;
DROP FUNCTION IF EXISTS audit_auditentry_append_only();
"""


def number_existing_entries(apps, schema_editor):
    schema_editor.execute(_NUMBER_EXISTING)


def create_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_CREATE_TRIGGER, params=None)  # no placeholders: RAISE uses %


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_DROP_TRIGGER, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='auditentry',
            name='position',
            field=models.BigIntegerField(blank=True, editable=False, null=True, unique=True),
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='hash',
            field=models.CharField(blank=True, editable=False, max_length=64, null=True, unique=True),
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='prev_hash',
            field=models.CharField(blank=True, editable=False, max_length=64, null=True),
        ),
        migrations.RunPython(number_existing_entries, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name='auditentry',
            index=models.Index(condition=models.Q(('position__isnull', True)), fields=['id'], name='audit_entry_pending_idx'),
        ),
        migrations.AddConstraint(
            model_name='auditentry',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('hash__isnull', True), ('position__isnull', True), ('prev_hash__isnull', True)), models.Q(('hash__isnull', False), ('position__gte', 1), ('prev_hash__isnull', False)), _connector='OR'), name='audit_entry_pending_or_sequenced'),
        ),
        migrations.RunPython(create_trigger, drop_trigger),
    ]
