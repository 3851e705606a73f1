"""A run's status tells the truth (issue 13): a run whose agents failed is "completed with
errors (n of m agents failed)" in a warning colour, on the run panel, the trace page and
/metrics."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from tests.agents.test_durable_runs import case, enqueue  # noqa: F401 - the two-stage test pipeline

pytestmark = pytest.mark.django_db


def test_a_run_with_a_failed_agent_is_completed_with_errors_on_every_view(
        case, alice_client, django_capture_on_commit_callbacks):  # noqa: F811
    run = enqueue(case, django_capture_on_commit_callbacks, fail="test_b")
    assert run.status == AgentRun.Status.COMPLETED_WITH_ERRORS

    panel = alice_client.get(f"/cases/{case.reference}/runs/").content.decode()
    assert 'class="badge badge-run-completed_with_errors">Completed with errors (1 of 3 agents failed)' in panel
    assert ">Completed<" not in panel
    trace = alice_client.get(f"/cases/{case.reference}/runs/{run.pk}/trace/").content.decode()
    assert "Completed with errors (1 of 3 agents failed)" in trace
    css = open("static/css/casework.css").read()
    assert ".badge-run-completed_with_errors" in css


def test_a_run_whose_agents_all_succeeded_is_completed(case, django_capture_on_commit_callbacks):  # noqa: F811
    run = enqueue(case, django_capture_on_commit_callbacks)
    assert run.status == AgentRun.Status.COMPLETED
    assert run.status_label == "Completed"


def test_metrics_count_runs_completed_with_errors(case, client, django_capture_on_commit_callbacks):  # noqa: F811
    enqueue(case, django_capture_on_commit_callbacks, fail="test_b")
    enqueue(case, django_capture_on_commit_callbacks)
    body = client.get("/metrics").content.decode()
    assert 'casework_agent_runs{pipeline="test_two_stage",status="completed_with_errors"} 1.0' in body
    assert 'casework_agent_runs{pipeline="test_two_stage",status="completed"} 1.0' in body
    assert 'casework_agent_runs{pipeline="test_two_stage",status="waiting"} 0.0' in body


def test_the_generic_rerun_refuses_a_closed_case_with_409_naming_why(
        case, alice, alice_client, django_capture_on_commit_callbacks):  # noqa: F811
    from casework.cases.services import case_close

    run = enqueue(case, django_capture_on_commit_callbacks, fail="test_b")
    case_close(actor=alice, case=case, outcome="legit", reason="Checked by phone.")
    response = alice_client.post(f"/cases/{case.reference}/runs/{run.pk}/rerun/", {"agent": "test_b"})
    assert response.status_code == 409
    assert f"{case.reference} is closed; its agent runs cannot be re-run." in response.content.decode()
    htmx = alice_client.post(f"/cases/{case.reference}/runs/{run.pk}/rerun/", HTTP_HX_REQUEST="true")
    assert htmx.status_code == 409 and b"is closed" in htmx.content
    assert AgentRun.objects.filter(case=case).count() == 1
    panel = alice_client.get(f"/cases/{case.reference}/runs/").content.decode()
    assert "/rerun/" not in panel  # no button offers what would be refused


def test_the_generic_rerun_refuses_a_run_waiting_for_a_person(
        case, alice_client, django_capture_on_commit_callbacks):  # noqa: F811
    run = enqueue(case, django_capture_on_commit_callbacks)
    AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.WAITING)
    response = alice_client.post(f"/cases/{case.reference}/runs/{run.pk}/rerun/")
    assert response.status_code == 409
    assert "cannot be re-run: it is waiting for a person" in response.content.decode()
    assert AgentRun.objects.filter(case=case).count() == 1
