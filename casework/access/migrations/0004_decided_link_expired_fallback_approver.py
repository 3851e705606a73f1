"""Issue 22: two declared states (Link Expired, Decided by the Investigator) and the system's
fallback approver. Existing changes whose case a person already closed read Decided (they
read Manual Intervention Required or an earlier working state: the wrong state this fixes);
the case's own audit trail already holds the decision, so no status entry is written here.
Changes still waiting on a link that has expired are moved by the periodic task on its next
run, with their audit entry."""

import django.db.models.deletion
from django.db import migrations, models


def closed_cases_read_decided(apps, schema_editor):
    HRMutation = apps.get_model("access", "HRMutation")
    HRMutation.objects.filter(case__closed_at__isnull=False).exclude(status="decided").update(status="decided")


class Migration(migrations.Migration):

    dependencies = [
        ('access', '0003_notification_moved_to_shared_app'),
        ('cases', '0006_case_due_at'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='hrmutation',
            name='access_mutation_status_valid',
        ),
        migrations.AddField(
            model_name='system',
            name='fallback_approver',
            field=models.ForeignKey(blank=True, help_text="Validates changes on this system when the changer's manager and their managers cannot (absent, the changer or the beneficiary, no login). Needs a Casework login.", null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='access.employee'),
        ),
        migrations.AlterField(
            model_name='hrmutation',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('investigation_started', 'Investigation Started'), ('approved', 'Approved'), ('clarification_requested', 'Clarification Requested'), ('awaiting_user_response', 'Awaiting User Response'), ('rejected_invalid_claim', 'Rejected - Invalid User Claim'), ('manager_verification_requested', 'Manager Verification Requested'), ('awaiting_manager_response', 'Awaiting Manager Response'), ('rejected_manager_denied', 'Rejected - Manager Denied'), ('manual_intervention_required', 'Manual Intervention Required'), ('advisory_report_generated', 'Advisory Report Generated'), ('link_expired', 'Link Expired - No User Response'), ('decided', 'Decided by the Investigator')], default='pending', max_length=40),
        ),
        migrations.AddConstraint(
            model_name='hrmutation',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'investigation_started', 'approved', 'clarification_requested', 'awaiting_user_response', 'rejected_invalid_claim', 'manager_verification_requested', 'awaiting_manager_response', 'rejected_manager_denied', 'manual_intervention_required', 'advisory_report_generated', 'link_expired', 'decided'])), name='access_mutation_status_valid'),
        ),
        migrations.AlterField(
            model_name='employeeclaim',
            name='validation_status',
            field=models.CharField(choices=[('pending', 'Being checked'), ('valid', 'Confirmed by the records'), ('invalid', 'Not confirmed by the records'), ('unverifiable', 'No record could verify it')], default='pending', max_length=14),
        ),
        migrations.RunPython(closed_cases_read_decided, migrations.RunPython.noop),
    ]
