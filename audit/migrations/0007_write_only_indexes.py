"""Indexes only ever written (issue 29): single-column indexes whose column leads a composite
index of the same table, and Django's varchar_pattern_ops twins of indexed CharFields that no
query filters by prefix (casework/db_indexes.py). Each is updated on every INSERT and on every
UPDATE that moves the row, several times per agent run.

On SQLite the AlterField rebuilds the table, which drops the append-only triggers with the old
table (audit 0004 says so): they are created again after it, and again after the rebuild when
the migration is reversed."""

from importlib import import_module

from django.db import migrations, models

from casework.db_indexes import pattern_ops_drop

_guard = import_module("audit.migrations.0004_append_only_trigger_sqlite")


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0006_run_start_index'),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, _guard.create_triggers),  # reversed: after the rebuild
        pattern_ops_drop(
            ('audit_auditentry_action_dee621eb_like', 'audit_auditentry', 'action'),
            ('audit_auditentry_case_ref_255ec2bf_like', 'audit_auditentry', 'case_ref'),
            ('audit_auditentry_correlation_id_3ac25952_like', 'audit_auditentry', 'correlation_id'),
            ('audit_auditentry_hash_718ebbcd_like', 'audit_auditentry', 'hash'),
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='case_id',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(_guard.create_triggers, _guard.drop_triggers),  # after the rebuild
    ]
