from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0004_run_case_optional'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='agentrun',
            name='agentrun_status_valid',
        ),
        migrations.AlterField(
            model_name='agentrun',
            name='status',
            field=models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('waiting', 'Waiting for a person'), ('completed', 'Completed'), ('completed_with_errors', 'Completed with errors'), ('failed', 'Failed'), ('timed_out', 'Timed out'), ('cancelled', 'Ended: case closed')], db_index=True, default='queued', max_length=24),
        ),
        migrations.AddConstraint(
            model_name='agentrun',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['queued', 'running', 'waiting', 'completed', 'completed_with_errors', 'failed', 'timed_out', 'cancelled'])), name='agentrun_status_valid'),
        ),
    ]
