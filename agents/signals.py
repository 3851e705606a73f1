"""The runtime listening to the shared case domain."""

from __future__ import annotations

from django.dispatch import Signal, receiver

from casework.cases.models import Case
from casework.cases.signals import case_closed

# Sent with run=<AgentRun> once a run that ended failed or timed out has committed
# (agents.runtime.pipeline._end).
run_failed = Signal()


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
