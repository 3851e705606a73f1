"""Indexes only ever written (issue 29): single-column indexes whose column leads a composite
index of the same table, and Django's varchar_pattern_ops twins of indexed CharFields that no
query filters by prefix (casework/db_indexes.py). Each is updated on every INSERT and on every
UPDATE that moves the row, several times per agent run."""

import django.db.models.deletion
from django.db import migrations, models

from casework.db_indexes import pattern_ops_drop


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0009_write_only_indexes'),
        ('outbox', '0004_outboundemail'),
    ]

    operations = [
        pattern_ops_drop(
            ('outbox_outboxevent_id_c5a3eacd_like', 'outbox_outboxevent', 'id'),
            ('outbox_outboxevent_type_c445f1e1_like', 'outbox_outboxevent', 'type'),
        ),
        migrations.AlterField(
            model_name='outboxevent',
            name='case',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='outbox_events', to='cases.case'),
        ),
    ]
