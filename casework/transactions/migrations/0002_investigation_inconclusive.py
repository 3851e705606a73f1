"""Investigation.status gains INCONCLUSIVE (casework/transactions/states.py)."""

from django.db import migrations, models


def completed_without_context_is_inconclusive(apps, schema_editor):
    """An investigation whose context could not be loaded used to end COMPLETED (LOW,
    confidence 0): nothing was learned, so it is INCONCLUSIVE."""
    Investigation = apps.get_model("transactions", "Investigation")
    inconclusive = [pk for pk, state in Investigation.objects.filter(status="COMPLETED")
                    .values_list("pk", "state").iterator()
                    if "context_tool" in (state or {}).get("completed_steps", []) and not (state or {}).get("context")]
    Investigation.objects.filter(pk__in=inconclusive).update(status="INCONCLUSIVE")


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0006_case_due_at'),
        ('transactions', '0001_initial'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='investigation',
            name='txn_investigation_status_valid',
        ),
        migrations.AlterField(
            model_name='investigation',
            name='status',
            field=models.CharField(choices=[('PENDING', 'Pending'), ('IN_PROGRESS', 'In progress'), ('COMPLETED', 'Completed'), ('INCONCLUSIVE', 'Inconclusive'), ('FAILED', 'Failed'), ('TIMED_OUT', 'Timed out')], default='PENDING', max_length=12),
        ),
        migrations.AddConstraint(
            model_name='investigation',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['PENDING', 'IN_PROGRESS', 'COMPLETED', 'INCONCLUSIVE', 'FAILED', 'TIMED_OUT'])), name='txn_investigation_status_valid'),
        ),
        migrations.RunPython(completed_without_context_is_inconclusive, migrations.RunPython.noop),
    ]
