"""A run that waited in "Budget reached" under the old flag (state["budget_reached"]) waits on a
RunPause of kind budget instead, the one pause mechanism (agents.runtime.pause): a lead's raise
or stop finds it there. Its refused calls are made afresh when it resumes, as before."""

from django.db import migrations


def forwards(apps, schema_editor):
    AgentRun = apps.get_model("agents", "AgentRun")
    RunPause = apps.get_model("agents", "RunPause")
    for run in AgentRun.objects.filter(status="budget_reached").select_related("case").iterator():
        state = dict(run.state or {})
        reached = state.pop("budget_reached", None) or {}
        if not RunPause.objects.filter(run=run, kind="budget", status="pending").exists():
            calls = [str(key) for key in reached.get("calls") or []] or ["(step)"]
            RunPause.objects.create(
                run=run, case=run.case, case_type=getattr(run.case, "case_type", "") or "", kind="budget",
                call_key=calls[0][:80], step=str(reached.get("step", ""))[:80], reason=str(reached.get("message", "")),
                policy="the case's budget", snapshot={"calls": {key: {} for key in calls}})
        state["paused"] = True
        AgentRun.objects.filter(pk=run.pk).update(state=state)


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0012_run_state_and_calls_encrypted"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
