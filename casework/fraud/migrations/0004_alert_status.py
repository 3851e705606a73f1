"""The fraud alert's own status (casework/fraud/states.py), filled for existing alerts from
what their case and runs show: a closed case is decided (its pattern captured, its capture
still running, or failed); an open one was received, is being assessed, or was assessed by
the orchestrator or not (a finished run without the orchestrator's answer failed)."""

from django.db import migrations, models

STATES = ["received", "assessing", "assessed", "assessment_failed", "decided", "knowledge_captured", "capture_failed"]
ACTIVE = ("queued", "running")


def status_for(alert, AgentRun, KnowledgePattern) -> str:
    case = alert.case
    runs = AgentRun.objects.filter(case_id=case.pk, pipeline="fraud").order_by("-created_at", "-id")
    if case.status == "closed":
        if KnowledgePattern.objects.filter(case_id=case.pk).exists():
            return "knowledge_captured"
        close = runs.filter(mode="close").first()
        return "decided" if close is not None and close.status in ACTIVE else "capture_failed"
    run = runs.filter(mode__in=("alert_creation", "case_open")).first()
    if run is None or (run.status == "queued" and case.status == "new"):
        return "received"
    if run.status in ACTIVE:
        return "assessing"
    entry = (run.state or {}).get("results", {}).get("orchestrator") or {}
    if entry.get("output") is not None and not entry.get("error"):
        return "assessed"
    return "assessment_failed"


def fill(apps, schema_editor):
    Alert = apps.get_model("fraud", "Alert")
    AgentRun = apps.get_model("agents", "AgentRun")
    KnowledgePattern = apps.get_model("fraud", "KnowledgePattern")
    by_status: dict[str, list[int]] = {}
    for alert in Alert.objects.select_related("case").iterator(chunk_size=500):
        by_status.setdefault(status_for(alert, AgentRun, KnowledgePattern), []).append(alert.pk)
    for status, pks in by_status.items():
        for start in range(0, len(pks), 500):
            Alert.objects.filter(pk__in=pks[start:start + 500]).update(status=status)


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0007_run_started_index'),
        ('cases', '0006_case_due_at'),
        ('fraud', '0003_account_links'),
    ]

    operations = [
        migrations.AddField(
            model_name='alert',
            name='status',
            field=models.CharField(choices=[('received', 'Received'), ('assessing', 'Being assessed'), ('assessed', 'Assessed'), ('assessment_failed', 'Assessment failed'), ('decided', 'Decided'), ('knowledge_captured', 'Knowledge captured'), ('capture_failed', 'Knowledge capture failed')], db_index=True, default='received', max_length=20),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='alert',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', STATES)), name='fraud_alert_status_valid'),
        ),
    ]
