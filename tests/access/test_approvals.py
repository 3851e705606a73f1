"""Approvals (issue 46) in the access review: the request-for-information agent's
send_notification acts outside Casework (it e-mails the employee), so by default the run
waits for a person before it runs; approve (as asked, or edited), deny, expire. In-process
here (eager tasks, the offline agents, or the fake OpenAI server playing them);
tests/access/test_approvals_worker.py does it with real workers killed while the run waits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import AgentRun, RunPause
from agents.tasks import approvals_expire
from audit.models import AuditEntry
from casework.access.models import InfoRequest
from casework.cases.notifications.models import Notification
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture
from tests.fakes.offline_model import OfflineModel

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def approvals_on(settings):
    """The default policy (the access conftest turns it off for the flow's other tests)."""
    settings.AGENT_APPROVALS = {"send_notification": {"*": "always"}}


def waiting_run(mutation) -> AgentRun:
    run = AgentRun.objects.get(case=mutation.case, mode="investigate")
    assert run.status == AgentRun.Status.WAITING_APPROVAL, (run.status, run.error)
    return run


def test_the_run_waits_before_it_emails_the_employee_and_holds_nothing(approvals_on, submit, alice):
    mutation = submit()
    run = waiting_run(mutation)
    pause = RunPause.objects.get()
    assert (pause.status, pause.kind, pause.tool, pause.agent) == ("pending", "approval", "send_notification",
                                                                   "access_request_info")
    assert pause.arguments["recipient"] == "employee" and pause.arguments["mutation_id"] == mutation.mutation_id
    assert pause.policy == "always (settings)" and pause.case_id == mutation.case_id
    assert pause.expires_at is not None and pause.snapshot["calls"][0]["name"] == "send_notification"
    # Nothing was sent, and no worker holds the run.
    assert InfoRequest.objects.count() == 0
    assert run.claim_token == "" and run.finished_at is None
    mutation.refresh_from_db()
    assert mutation.status == "clarification_requested"
    actions = list(AuditEntry.objects.filter(case_id=mutation.case_id).values_list("action", flat=True))
    assert "agent.approval_requested" in actions and "agent.run_waiting_approval" in actions
    # The case's people are told (alice's team; the case has no assignee).
    note = Notification.objects.get(kind="approval")
    assert note.recipient_user == alice and "send_notification" in note.subject


def test_approved_with_edited_arguments_it_runs_once_with_them_and_the_flow_goes_on(approvals_on, submit, api):
    mutation = submit()
    run = waiting_run(mutation)
    pause = RunPause.objects.get()
    edited = {**pause.arguments, "subject": "Please explain your change on FinanceApp (edited)"}

    response = api.post(f"/api/approvals/{pause.pk}/approve/", {"arguments": edited}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "approved"
    request = InfoRequest.objects.get()  # once
    assert request.subject == edited["subject"]
    run.refresh_from_db()
    assert run.status == AgentRun.Status.WAITING, (run.status, run.error)  # for the employee's answer now
    mutation.refresh_from_db()
    assert mutation.status in ("user_request_queued", "awaiting_user_response")
    pause.refresh_from_db()
    assert pause.resumed_at is not None and pause.approved_arguments == edited and pause.decided_by == "alice"
    entry = AuditEntry.objects.get(action="agent.approval_approved")
    assert entry.actor == "alice" and entry.data["edited"] is True
    assert AuditEntry.objects.filter(action="agent.run_resumed", case_id=mutation.case_id).exists()
    # A duplicate wake-up (a re-sent broker message) finds nothing to claim: the step is not repeated.
    from agents.tasks import run_pipeline

    run_pipeline.apply(args=(run.pk,))
    assert InfoRequest.objects.count() == 1
    # A second answer is refused: the approval was used.
    again = api.post(f"/api/approvals/{pause.pk}/approve/", {}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "not_pending"
    assert InfoRequest.objects.count() == 1


def test_edited_arguments_outside_the_schema_are_a_400_naming_the_field(approvals_on, submit, api):
    submit()
    pause = RunPause.objects.get()
    bad = api.post(f"/api/approvals/{pause.pk}/approve/", {"arguments": {**pause.arguments, "subject": "Hi"}},
                   format="json")
    assert bad.status_code == 400
    assert list(bad.json()) == ["arguments.subject"]
    wrong = api.post(f"/api/approvals/{pause.pk}/approve/",
                     {"arguments": {**pause.arguments, "recipient": "ceo"}}, format="json")
    assert wrong.status_code == 400 and list(wrong.json()) == ["arguments.recipient"]
    no_reason = api.post(f"/api/approvals/{pause.pk}/deny/", {}, format="json")
    assert no_reason.status_code == 400 and "reason" in no_reason.json()
    pause.refresh_from_db()
    assert pause.status == "pending" and InfoRequest.objects.count() == 0


def test_a_denial_reaches_the_model_as_a_tool_result_and_the_run_ends_truthfully(approvals_on, settings, submit, api,
                                                                                   fake_openai):  # noqa: F811
    OfflineModel(fake_openai)
    mutation = submit()
    run = waiting_run(mutation)
    pause = RunPause.objects.get()
    asked = len(fake_openai.requests)

    response = api.post(f"/api/approvals/{pause.pk}/deny/", {"reason": "Priya is on leave; ask her manager."},
                        format="json")

    assert response.status_code == 200, response.json()
    # The model's next request carries the denial as the result of its send_notification call.
    resumed = fake_openai.requests[asked]
    tool_messages = [m for m in resumed.messages if m["role"] == "tool"]
    assert "ApprovalDenied" in tool_messages[-1]["content"]
    assert "Priya is on leave; ask her manager." in tool_messages[-1]["content"]
    assert InfoRequest.objects.count() == 0
    run.refresh_from_db()
    # The agent said it could not notify; the step failed, and is not retried behind the person's back.
    assert run.status == AgentRun.Status.COMPLETED_WITH_ERRORS, (run.status, run.error)
    mutation.refresh_from_db()
    assert mutation.status in ("manual_intervention_required", "advisory_report_generated")
    assert AgentRun.objects.filter(case=mutation.case).count() == 1  # no retry run
    assert AuditEntry.objects.filter(action="agent.approval_denied", actor="alice").exists()


def test_an_unanswered_approval_expires_and_the_run_ends_approval_expired(approvals_on, settings, submit):
    mutation = submit()
    run = waiting_run(mutation)
    pause = RunPause.objects.get()

    assert approvals_expire(now=pause.expires_at - timedelta(seconds=1)) == 0
    assert approvals_expire(now=pause.expires_at + timedelta(seconds=1)) == 1

    pause.refresh_from_db()
    run.refresh_from_db()
    assert pause.status == "expired"
    assert run.status == AgentRun.Status.APPROVAL_EXPIRED and run.finished_at is not None
    assert "was not made" in run.error
    assert InfoRequest.objects.count() == 0
    actions = set(AuditEntry.objects.filter(case_id=mutation.case_id).values_list("action", flat=True))
    assert {"agent.approval_expired", "agent.run_approval_expired"} <= actions
    assert approvals_expire(now=timezone.now() + timedelta(days=30)) == 0


def test_closing_the_case_cancels_its_pending_approval(approvals_on, submit, alice):
    from casework.cases.services import case_close

    mutation = submit()
    run = waiting_run(mutation)
    case_close(actor=alice, case=mutation.case, outcome="manual", reason="Handled by phone.")
    run.refresh_from_db()
    assert run.status == AgentRun.Status.CANCELLED
    assert RunPause.objects.get().status == "cancelled"
