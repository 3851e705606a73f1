"""Indexes only ever written (issue 29): single-column indexes whose column leads a composite
index of the same table, and Django's varchar_pattern_ops twins of indexed CharFields that no
query filters by prefix (casework/db_indexes.py). Each is updated on every INSERT and on every
UPDATE that moves the row, several times per agent run."""

from django.db import migrations

from casework.db_indexes import pattern_ops_drop


class Migration(migrations.Migration):

    dependencies = [
        ('fraud', '0005_decided_vector'),
    ]

    operations = [
        pattern_ops_drop(
            ('fraud_alert_status_3f7810c9_like', 'fraud_alert', 'status'),
        ),
    ]
