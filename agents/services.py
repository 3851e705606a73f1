"""Starting runs again: the whole run, or one failed agent (keeping every other result)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from agents.models import AgentRun
from agents.tasks import pipeline_enqueue
from audit.services import audit_record
from casework.errors import Conflict, DomainError

# Runs that cannot start again: they wait for a person (re-running would ask them twice) or
# were ended because their case was closed.
NOT_RERUNNABLE = {
    AgentRun.Status.WAITING: "it is waiting for a person to answer; their answer continues it",
    AgentRun.Status.CANCELLED: "it was ended when the case was closed",
    AgentRun.Status.BUDGET_REACHED: "it waits for its case's budget; a lead raising the budget continues it",
    AgentRun.Status.WAITING_APPROVAL: "it waits for a person's approval of its next step; their answer continues it",
}


def _refuse_if_active(run: AgentRun) -> None:
    """Refuse (409, named) a re-run of a closed case's run, of a run that cannot re-run, or
    while a run of the same pipeline is in progress."""
    if run.case is not None and run.case.is_closed:
        raise Conflict(f"{run.case.reference} is closed; its agent runs cannot be re-run.", code="case_closed")
    if run.status in NOT_RERUNNABLE:
        raise Conflict(f"Run #{run.pk} ({run.pipeline} · {run.mode}) cannot be re-run: {NOT_RERUNNABLE[run.status]}.",
                       code="run_not_rerunnable")
    if AgentRun.objects.filter(case=run.case, pipeline=run.pipeline, status__in=AgentRun.ACTIVE).exists():
        raise Conflict("A run of this pipeline is already in progress for this case.", code="run_active")


@transaction.atomic
def run_rerun(*, actor, run: AgentRun) -> AgentRun:
    """Run the same pipeline and mode again from scratch."""
    _refuse_if_active(run)
    return pipeline_enqueue(case=run.case, pipeline=run.pipeline, mode=run.mode, actor=actor,
                            initial_state={"rerun_of": run.pk, **_carry_inputs(run)})


@transaction.atomic
def run_rerun_agent(*, actor, run: AgentRun, key: str) -> AgentRun:
    """A new run that repeats one agent's call and everything that depends on it.

    Results of earlier stages and of the agent's siblings are copied; the agent's own result
    and those of later stages (which read it) are computed again.
    """
    if key not in run.results:
        raise DomainError(f"This run has no agent {key!r}.", code="unknown_agent")
    _refuse_if_active(run)
    stage = run.results[key].get("stage", 0)
    kept = {k: v for k, v in run.results.items() if k != key and v.get("stage", 0) <= stage}
    return pipeline_enqueue(case=run.case, pipeline=run.pipeline, mode=run.mode, actor=actor,
                            initial_state={"rerun_of": run.pk, "rerun_agent": key, "results": kept,
                                           **_carry_inputs(run)})


def _carry_inputs(run: AgentRun) -> dict:
    """What the pipeline's prepare step put in the state besides results (e.g. the cache source)."""
    return {k: v for k, v in run.state.items() if k.startswith("input_")}


@transaction.atomic
def run_attach_case(*, actor, run: AgentRun, case) -> AgentRun:
    """Give a run that started without a case (intake before the case exists) its case.

    A run belongs to one case for good: attaching it to a second is refused. Its audit
    entries written before now keep no case (the chain is append-only); the one written
    here names both, so the case's history can find the run's earlier work by its id."""
    if run.case_id is not None:
        if run.case_id == case.pk:
            return run
        raise Conflict(f"Run {run.pk} already belongs to {run.case.reference}.", code="run_attached")
    updated = AgentRun.objects.filter(pk=run.pk, case__isnull=True).update(case=case)
    if updated != 1:
        raise Conflict(f"Run {run.pk} was attached to another case meanwhile.", code="run_attached")
    run.case = case
    audit_record(actor=actor, action="agent.run_attached", case=case, obj=run,
                 data={"pipeline": run.pipeline, "mode": run.mode, "run": run.pk})
    return run


@transaction.atomic
def runs_end_waiting(*, actor, case, reason: str) -> int:
    """End the case's runs that wait for a person (the case was closed: nobody will answer
    them), or for a lead to raise its budget. Each moves to cancelled with the reason and is
    audited; returns how many."""
    from agents.models import RunPause

    waiting = (AgentRun.Status.WAITING, AgentRun.Status.WAITING_APPROVAL, AgentRun.Status.BUDGET_REACHED)
    runs = list(AgentRun.objects.select_for_update().filter(case=case, status__in=waiting))
    now = timezone.now()
    for run in runs:
        AgentRun.objects.filter(pk=run.pk, status=run.status).update(
            status=AgentRun.Status.CANCELLED, finished_at=now, error=reason[:1000])
        # Its approvals wait for nobody now (agents.runtime.pause): the inbox drops them.
        RunPause.objects.filter(run=run, status=RunPause.Status.PENDING).update(
            status=RunPause.Status.CANCELLED, decided_at=now, answer=reason[:2000])
        audit_record(actor=actor, action="agent.run_cancelled", case=case, obj=run,
                     data={"pipeline": run.pipeline, "mode": run.mode, "run": run.pk, "from": run.status,
                           "reason": reason[:500]})
    return len(runs)
