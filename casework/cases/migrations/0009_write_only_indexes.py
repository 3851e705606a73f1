"""Indexes only ever written (issue 29): single-column indexes whose column leads a composite
index of the same table, and Django's varchar_pattern_ops twins of indexed CharFields that no
query filters by prefix (casework/db_indexes.py). Each is updated on every INSERT and on every
UPDATE that moves the row, several times per agent run."""

from django.db import migrations, models

from casework.db_indexes import pattern_ops_drop


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0008_dashboard_window_indexes'),
    ]

    operations = [
        pattern_ops_drop(
            ('cases_case_reference_cb43aa34_like', 'cases_case', 'reference'),
        ),
        migrations.AlterField(
            model_name='case',
            name='case_type',
            field=models.CharField(choices=[('fraud_alert', 'Fraud alert'), ('support_ticket', 'Support ticket'), ('access_change', 'Access change'), ('transaction_investigation', 'Transaction investigation'), ('release_risk', 'Release risk')], max_length=40),
        ),
        migrations.AlterField(
            model_name='case',
            name='created_at',
            field=models.DateTimeField(auto_now_add=True),
        ),
        migrations.AlterField(
            model_name='case',
            name='updated_at',
            field=models.DateTimeField(auto_now=True),
        ),
    ]
