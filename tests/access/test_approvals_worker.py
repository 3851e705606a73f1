"""Issue 46's first test with real parts: the access pipeline runs in a real Celery worker
(`celery -A casework worker`, through the broker), against the fake OpenAI server playing the
agents (tests/fakes/offline_model.py), reaches send_notification (it e-mails the employee:
"acts") and waits for approval. The worker is killed (SIGKILL) while the run waits; a person
approves through the API with edited arguments; a new worker resumes the run from its saved
step and sends the request ONCE, with the approved arguments.

The only waits are for things to happen (the run to pause, to end), bounded by a guard."""

from __future__ import annotations

import json

from agents.models import AgentCall, AgentRun, RunPause
from casework.access.models import InfoRequest
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture
from tests.fakes.offline_model import OfflineModel
from tests.ops.test_worker_metrics import start_worker, wait_for  # noqa: F401 - fixture

# A failure guard only: a worker starts in about 3 s and the run takes about 2 s.
DEADLINE_SECONDS = 90

APPROVALS = {"send_notification": {"*": "always"}}


def test_a_run_waiting_for_approval_survives_its_worker_and_resumes_once_with_the_edited_arguments(
        start_worker, fake_openai, submit, api, settings):  # noqa: F811 - fixtures
    settings.AGENT_APPROVALS = APPROVALS
    model = OfflineModel(fake_openai)
    env = {"LLM_PROVIDER": "openai", "OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": "test",
           "LLM_MODEL": "fake-model", "AGENT_APPROVALS": json.dumps(APPROVALS), "ACCESS_RETRY_COUNTDOWNS": "0"}
    first = start_worker(**env)

    mutation = submit()  # committed: its investigation goes through the broker to the worker
    run = wait_for(lambda: AgentRun.objects.filter(case=mutation.case,
                                                   status=AgentRun.Status.WAITING_APPROVAL).first(),
                   [first], "The run did not come to wait for approval", DEADLINE_SECONDS)
    pause = RunPause.objects.get(run=run)
    assert pause.tool == "send_notification" and pause.status == "pending"
    assert "access_request_info" in model.agents  # the agents ran through the fake endpoint
    assert InfoRequest.objects.count() == 0 and run.claim_token == ""

    first.stop()  # SIGKILL: the run waits in the database, nowhere else
    requests_before = len(fake_openai.requests)
    edited = {**pause.arguments, "subject": "Approved and edited: please explain your FinanceApp change"}
    response = api.post(f"/api/approvals/{pause.pk}/approve/", {"arguments": edited}, format="json")
    assert response.status_code == 200, response.json()
    run.refresh_from_db()
    assert run.status == AgentRun.Status.QUEUED  # its wake-up waits in the broker for any worker
    assert InfoRequest.objects.count() == 0

    second = start_worker(**env)
    run = wait_for(lambda: AgentRun.objects.filter(pk=run.pk).exclude(
        status__in=[*AgentRun.ACTIVE]).first(), [second], "The run did not end after the approval", DEADLINE_SECONDS)

    assert run.status == AgentRun.Status.WAITING, (run.status, run.error, second.log())
    # The step was performed once, with the approved arguments.
    request = InfoRequest.objects.get()
    assert request.subject == edited["subject"] and request.kind == InfoRequest.Kind.EMPLOYEE
    sent = AgentCall.objects.filter(run=run, kind=AgentCall.Kind.TOOL, name="send_notification")
    assert [(c.status, c.input["subject"]) for c in sent] == [("ok", edited["subject"])]
    pause.refresh_from_db()
    assert pause.status == "approved" and pause.resumed_at is not None
    # The resumed agent went on from its saved conversation: its first request after the approval
    # carries the tool's result, not a new start.
    after = fake_openai.requests[requests_before]
    assert any(m["role"] == "tool" and "request_id" in (m.get("content") or "") for m in after.messages)
