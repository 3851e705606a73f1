"""The runtime listening to the shared case domain."""

from __future__ import annotations

from django.dispatch import receiver

from agents.runtime.signals import run_ended, run_failed, run_resumed
from casework.cases.models import Case
from casework.cases.signals import case_closed


@receiver(case_closed, sender=Case, dispatch_uid="agents_end_waiting_runs")
def _on_case_closed(sender, case, decision, actor, **kwargs):
    """A closed case has nobody left to answer its runs' questions: end the waiting ones."""
    from agents.services import runs_end_waiting

    runs_end_waiting(actor=actor or "system", case=case,
                     reason=f"The case was closed ({decision.outcome_label}) while this run waited for a person.")


@receiver(run_failed, dispatch_uid="agents_notify_run_failed")
def _on_run_failed(sender, run, **kwargs):
    """Tell the person who owns the case (the shared notifications; casework never imports agents)."""
    from casework.cases.notifications.services import notify_run_failed

    if run.case_id is None:
        return
    case = Case.objects.select_related("assignee").get(pk=run.case_id)
    notify_run_failed(case=case, run_label=f"{run.pipeline} #{run.pk}",
                      error=run.error or run.get_status_display())


@receiver(run_ended, dispatch_uid="agents_run_ended_event")
def _on_run_ended(sender, run, **kwargs):
    """run.completed / run.failed for outgoing webhooks (the outbox, casework/outbox). A run
    waiting for a person, or cancelled with its case, has not ended with a result."""
    from agents.models import AgentRun
    from casework.outbox.services import case_data, event_record

    kind = ("run.completed" if run.status in AgentRun.DONE
            else "run.failed" if run.status in (AgentRun.Status.FAILED, AgentRun.Status.TIMED_OUT) else None)
    if kind is None:
        return
    case = run.case if run.case_id else None  # loaded with the run (execute_run): no query
    event_record(type=kind, case=case, data={
        "run": {"id": run.pk, "pipeline": run.pipeline, "mode": run.mode, "status": run.status, "error": run.error,
                "steps": run.step_count, "finished_at": run.finished_at.isoformat() if run.finished_at else None},
        "case": case_data(case) if case is not None else None})


@receiver(run_resumed, dispatch_uid="agents_run_resumed_wake")
def _on_run_resumed(sender, pause, **kwargs):
    """A person answered what the run waited for (agents.runtime.pause): wake it, on commit. A
    lost wake-up is re-sent by the sweeper (agents.tasks.resume_stale_runs: it is queued)."""
    from agents.tasks import run_pipeline

    run_pipeline.delay(pause.run_id)
