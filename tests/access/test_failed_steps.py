"""A step that failed shows as failed in every view, with its error (issue 13): a rights
check whose tool failed three times was three "done" rows on the run panel before."""

from __future__ import annotations

import pytest

from agents.models import AgentCall, AgentRun
from casework.access.models import HRMutation

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_rights_check_whose_tool_failed_shows_failed_everywhere(org, submit, client, alice):
    mutation = submit(changed_by=org.kees, system=org.payroll, access_level=org.write, field_changed="Salary band")
    mutation = HRMutation.objects.select_related("case").get(pk=mutation.pk)
    runs = list(AgentRun.objects.filter(case=mutation.case, mode="investigate").order_by("id"))
    # One attempt per run: each later attempt is a run of its own, started after its backoff.
    attempts = [run.results[f"rights_check.{n}"] for n, run in enumerate(runs, start=1)]
    assert len(attempts) == 3
    assert all("registry of Payroll is unavailable" in a["error"] for a in attempts)
    assert {a["error_type"] for a in attempts} == {"tool_error"}
    calls = AgentCall.objects.filter(run__in=runs, kind="agent", key__startswith="rights_check.")
    assert calls.count() == 3 and set(calls.values_list("status", flat=True)) == {"error"}
    assert {run.status for run in runs} == {AgentRun.Status.COMPLETED_WITH_ERRORS}

    client.force_login(alice)
    panel = client.get(f"/cases/{mutation.case.reference}/runs/").content.decode()
    rights_rows = [row for row in panel.split("<tr>") if "access_rights_check" in row]
    assert rights_rows and all("badge-error\">failed" in row and "registry of Payroll is unavailable" in row
                               for row in rights_rows)
    for run in runs:
        trace = client.get(f"/cases/{mutation.case.reference}/runs/{run.pk}/trace/").content.decode()
        assert "registry of Payroll is unavailable" in trace and "Completed with errors" in trace
