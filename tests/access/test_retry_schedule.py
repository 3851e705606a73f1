"""The retry schedule (issue 13): the attempts of a failed step are spaced out (30 s, then
2 min, as Celery countdowns on runs of their own), so a blip is not Manual Intervention at
once; a run scheduled for later is neither claimed nor woken by the sweeper early."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import AgentRun
from agents.runtime.pipeline import execute_run
from agents.tasks import resume_stale_runs
from audit.models import AuditEntry
from casework.access.models import HRMutation

pytestmark = pytest.mark.django_db(transaction=True)


def runs(case) -> list[AgentRun]:
    return list(AgentRun.objects.filter(case=case, mode="investigate").order_by("id"))


def due_now(run: AgentRun) -> None:
    AgentRun.objects.filter(pk=run.pk).update(not_before=timezone.now() - timedelta(seconds=1))


def test_a_failed_step_is_retried_after_a_backoff_not_at_once(org, submit, settings):
    settings.ACCESS_RETRY_COUNTDOWNS = [30, 120]
    mutation = submit(changed_by=org.kees, system=org.payroll, access_level=org.write, field_changed="Salary band")
    first, second = runs(mutation.case)
    assert set(first.results) == {"orchestrate.1", "rights_check.1"}  # one attempt, then the run ended
    assert second.status == AgentRun.Status.QUEUED and second.state["retry_due"] == {"step": "rights_check",
                                                                                       "attempt": 2}
    wait = (second.not_before - second.created_at).total_seconds()
    assert 29 <= wait <= 31
    queued = AuditEntry.objects.filter(case_id=mutation.case_id, action="agent.run_queued").order_by("id").last()
    assert queued.data["countdown"] == 30
    assert HRMutation.objects.get(pk=mutation.pk).status == "investigation_started"  # not manual intervention yet

    # Not before its time: neither a worker nor the sweeper starts it early.
    assert execute_run(second.pk) is None
    settings.RUN_QUEUED_STALE_AFTER_SECONDS = 0
    AgentRun.objects.filter(pk=second.pk).update(created_at=timezone.now() - timedelta(seconds=5))
    assert resume_stale_runs() == 0

    due_now(second)
    execute_run(second.pk)
    third = runs(mutation.case)[2]
    assert (third.not_before - third.created_at).total_seconds() == pytest.approx(120, abs=1)
    assert HRMutation.objects.get(pk=mutation.pk).status == "investigation_started"
    due_now(third)
    execute_run(third.pk)
    mutation = HRMutation.objects.get(pk=mutation.pk)
    assert mutation.status == "advisory_report_generated"
    assert mutation.reports.get().kind == "manual_intervention"
    assert any("Rights check failed 3 times" in line for line in mutation.reports.get().details)
