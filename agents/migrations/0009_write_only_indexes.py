"""Indexes only ever written (issue 29): single-column indexes whose column leads a composite
index of the same table, and Django's varchar_pattern_ops twins of indexed CharFields that no
query filters by prefix (casework/db_indexes.py). Each is updated on every INSERT and on every
UPDATE that moves the row, several times per agent run."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0008_agentcall_created_index'),
        ('cases', '0009_write_only_indexes'),
    ]

    operations = [
        migrations.AlterField(
            model_name='agentcall',
            name='run',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='calls', to='agents.agentrun'),
        ),
        migrations.AlterField(
            model_name='agentrun',
            name='case',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='agent_runs', to='cases.case'),
        ),
        migrations.AlterField(
            model_name='agentrun',
            name='status',
            field=models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('waiting', 'Waiting for a person'), ('completed', 'Completed'), ('completed_with_errors', 'Completed with errors'), ('failed', 'Failed'), ('timed_out', 'Timed out'), ('cancelled', 'Ended: case closed')], default='queued', max_length=24),
        ),
    ]
