"""Indexes only ever written (issue 29): single-column indexes whose column leads a composite
index of the same table, and Django's varchar_pattern_ops twins of indexed CharFields that no
query filters by prefix (casework/db_indexes.py). Each is updated on every INSERT and on every
UPDATE that moves the row, several times per agent run."""

from django.db import migrations, models

from casework.db_indexes import pattern_ops_drop


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0006_run_start_index'),
    ]

    operations = [
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
    ]
