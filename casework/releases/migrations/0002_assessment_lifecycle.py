"""The release assessment's declared lifecycle (casework/releases/states.py): two new states,
received (the detective is queued) and decided (a person closed the case), filled in for
existing releases; and why code raised a report's severity (RiskReport.adjusted_reason)."""

from django.db import migrations, models


def fill(apps, schema_editor):
    Release = apps.get_model("releases", "Release")
    RiskReport = apps.get_model("releases", "RiskReport")
    Release.objects.filter(case__status="closed").update(assessment="decided")
    # Still pending on a case nobody and no run has touched: the detective has not started.
    Release.objects.filter(assessment="pending", case__status="new").update(assessment="received")
    RiskReport.objects.exclude(adjusted_from="").filter(adjusted_reason="").update(
        adjusted_reason="the report was filed without all its data")


class Migration(migrations.Migration):

    dependencies = [
        ('cases', '0006_case_due_at'),
        ('releases', '0001_initial'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='release',
            name='release_assessment_valid',
        ),
        migrations.AddField(
            model_name='riskreport',
            name='adjusted_reason',
            field=models.TextField(blank=True),
        ),
        migrations.AlterField(
            model_name='release',
            name='assessment',
            field=models.CharField(choices=[('received', 'Received'), ('pending', 'Being assessed'), ('filed', 'Report filed'), ('failed', 'Assessment failed'), ('decided', 'Decided')], default='received', max_length=10),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='release',
            constraint=models.CheckConstraint(condition=models.Q(('assessment__in', ['received', 'pending', 'filed', 'failed', 'decided'])), name='release_assessment_valid'),
        ),
    ]
