"""Every model call made for a case is charged before it is sent, and parallel calls cannot pass
the case's budget by more than one call's estimate: fifty calls at once, through the pipeline
executor and the real OpenAI-compatible provider against the fake endpoint, on a budget worth
ten calls. The run then waits in "Budget reached"; a lead raises the budget and it finishes, or
stops it. Counted, never timed: what the endpoint served and what the ledger holds."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from pydantic import BaseModel

from agents.llm.base import LLMRequest
from agents.llm.errors import BudgetReached
from agents.models import AgentCall, AgentRun, RunPause
from agents.runtime import charging
from agents.runtime.agent import Agent
from agents.runtime.charging import ReserveRequest, Settlement
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, register_pipeline
from agents.runtime.runner import _start
from agents.tasks import pipeline_enqueue
from audit.models import AuditEntry
from casework.budgets.ledger import BudgetCharger, estimate_musd
from casework.budgets.models import CaseBudget
from casework.budgets.services import budget_run_stop, budget_set
from casework.cases.services import case_create
from tests.fakes.llm_servers import json_answer

pytestmark = pytest.mark.django_db(transaction=True)

FIFTY = 50


class Note(BaseModel):
    note: str


AGENTS = [Agent(id=f"budget_fan_{i:02d}", system_prompt="You are an analyst.", output_model=Note, max_tokens=200)
          for i in range(FIFTY)]
INPUT = {"facts": "the same for every call, so that every call's estimate is the same"}
register_pipeline(Pipeline(name="test_budget_fifty", modes={"full": [
    Stage("all_at_once", lambda ctx: [CallSpec(a.id, a, dict(INPUT)) for a in AGENTS]),
    Stage("after", lambda ctx: [CallSpec("budget_after", AGENTS[0], dict(INPUT))]),
]}))


def one_call_estimate() -> tuple[int, int, int]:
    """(µ$, tokens, prompt tokens) the runtime reserves for one of these calls."""
    _, _, messages = _start(AGENTS[0], dict(INPUT), None, None, None)
    prompt, most = charging.request_estimate(LLMRequest(messages=messages, max_tokens=AGENTS[0].max_tokens))
    return estimate_musd("openai", "fake-model", prompt, most), prompt + most, prompt


@pytest.fixture
def endpoint(fake_openai, budgets_on):
    _, _, prompt = one_call_estimate()
    # Each answer uses exactly what was reserved for it: ten calls spend the budget to the µ$.
    fake_openai.default = json_answer({"note": "ok"}, input_tokens=prompt, output_tokens=AGENTS[0].max_tokens)
    return fake_openai


def ten_calls_budget(lead, case):
    musd, _, _ = one_call_estimate()
    return budget_set(actor=lead, case=case, limit_usd=f"{10 * musd / 1_000_000:.6f}", limit_tokens=None,
                      reason="Ten calls' worth, for the test.")


def test_fifty_parallel_calls_on_ten_calls_budget_pass_it_by_at_most_one_and_the_run_waits(endpoint, lena):
    case = case_create(actor=lena, case_type="fraud_alert", title="Fifty at once")
    budget = ten_calls_budget(lena, case)
    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_budget_fifty", mode="full", actor="system")

    run.refresh_from_db()
    musd, tokens, _ = one_call_estimate()
    charging.flush()  # settlements are written after the calls, not waited for
    budget.refresh_from_db()
    served = len(endpoint.requests)
    assert 10 <= served <= 11, served
    assert run.status == AgentRun.Status.BUDGET_REACHED
    assert run.get_status_display() == "Budget reached"
    assert "This case has reached its budget of $" in run.status_label
    # The calls that were answered are saved; the refused ones are made when the run resumes.
    assert AgentCall.objects.filter(run=run, status="ok").count() == served
    # It waits on one pause of kind budget (the one pause mechanism: agents.runtime.pause),
    # holding every refused call; the approvals inbox does not list it.
    (pause,) = RunPause.objects.filter(run=run)
    assert pause.kind == RunPause.Kind.BUDGET and pause.status == RunPause.Status.PENDING
    assert "This case has reached its budget of $" in pause.reason
    assert sorted(pause.snapshot["calls"]) == sorted(a.id for a in AGENTS if a.id not in run.results)
    assert "budget_reached" not in run.state
    # The ledger: no reservation left behind, spent within the limit plus one call's estimate.
    assert budget.reserved_musd == 0 and budget.reserved_tokens == 0
    assert budget.spent_musd == served * musd <= budget.limit_musd + musd
    assert budget.calls == served and budget.refused == FIFTY - served
    assert budget.reached_at is not None
    actions = list(AuditEntry.objects.filter(case_id=case.pk).values_list("action", flat=True))
    assert actions.count("budget.reached") == 1 and actions.count("agent.run_budget_reached") == 1
    assert actions.count("agent.budget_requested") == 1
    # The worker let go of it: nothing claims or wakes a run that waits for a person.
    assert run.claim_token == ""


def test_a_lead_raising_the_budget_resumes_the_run_from_its_step_without_repeating_a_call(endpoint, lena):
    case = case_create(actor=lena, case_type="fraud_alert", title="Raise and go on")
    ten_calls_budget(lena, case)
    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_budget_fifty", mode="full", actor="system")
    served_before = len(endpoint.requests)

    budget_set(actor=lena, case=case, limit_usd="100", limit_tokens=None, reason="Worth finishing.")  # eager: runs

    run.refresh_from_db()
    charging.flush()
    assert run.status == AgentRun.Status.COMPLETED, (run.status, run.error)
    # Every one of the fifty once, then the last stage's call: none repeated.
    assert len(endpoint.requests) == FIFTY + 1
    assert served_before < FIFTY
    assert AgentCall.objects.filter(run=run, kind="agent").count() == FIFTY + 1
    budget = CaseBudget.objects.get(case=case)
    assert budget.reached_at is None and budget.reserved_musd == 0
    actions = list(AuditEntry.objects.filter(case_id=case.pk).values_list("action", flat=True))
    assert "budget.changed" in actions and "agent.budget_released" in actions and "agent.run_resumed" in actions
    (pause,) = RunPause.objects.filter(run=run)
    assert pause.status == RunPause.Status.APPROVED and pause.resumed_at is not None


def test_a_lead_may_stop_the_waiting_run_instead(endpoint, lena, alice):
    case = case_create(actor=lena, case_type="fraud_alert", title="Stop here")
    ten_calls_budget(lena, case)
    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_budget_fifty", mode="full", actor="system")
    run.refresh_from_db()
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):  # alice works the case but leads no team
        budget_run_stop(actor=alice, run=run, reason="No.")

    from django.test import Client

    client = Client()
    client.force_login(lena)
    page = client.get(f"/cases/{case.reference}/").content.decode()
    # The case's timeline folds the run's entries into its row, which says where it waits.
    assert "waiting: the case&#x27;s budget is reached" in page or "waiting: the case's budget is reached" in page

    run = budget_run_stop(actor=lena, run=run, reason="Enough spent on this one.")

    assert run.status == AgentRun.Status.STOPPED and run.finished_at is not None
    assert "Enough spent" in run.error
    assert AuditEntry.objects.filter(case_id=case.pk, action="agent.run_stopped").count() == 1
    assert RunPause.objects.get(run=run).status == RunPause.Status.CANCELLED
    assert "stopped by a person" in client.get(f"/cases/{case.reference}/").content.decode()


def test_fifty_threads_reserving_at_once_take_exactly_the_ten_that_fit(budgets_on, lena):
    """The ledger alone, fifty threads each on its own connection (as fifty worker processes'
    writers would be), all let go together (a barrier): the database decides, one conditional
    UPDATE each."""
    case = case_create(actor=lena, case_type="fraud_alert", title="Fifty reservations")
    estimate = estimate_musd("openai", "fake-model", 500, 200)
    budget_set(actor=lena, case=case, limit_usd=f"{10 * estimate / 1_000_000:.6f}", limit_tokens=None,
               reason="Ten calls' worth.")
    charger, barrier = BudgetCharger(), threading.Barrier(FIFTY)
    taken, refused, failed = [], [], []

    def reserve() -> None:
        try:
            barrier.wait()
            (result,) = charger.reserve_many([ReserveRequest(case=case.reference, provider="openai",
                                                             model="fake-model", input_tokens=500,
                                                             max_output_tokens=200)])
            (refused if isinstance(result, BudgetReached) else taken).append(
                str(result) if isinstance(result, BudgetReached) else result)
        except Exception as exc:  # noqa: BLE001 - reported below
            failed.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=reserve) for _ in range(FIFTY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert failed == []
    assert len(taken) == 10 and len(refused) == 40
    assert refused[0].startswith("This case has reached its budget of $") and "a lead can raise it" in refused[0]
    budget = CaseBudget.objects.get(case=case)
    assert budget.reserved_musd == 10 * estimate <= budget.limit_musd
    charger.settle_many([Settlement(reservation, released=True) for reservation in taken[:4]])
    budget.refresh_from_db()
    assert budget.reserved_musd == 6 * estimate


def test_a_failed_call_gives_its_reservation_back(budgets_on, fake_openai, lena):
    from agents.runtime.runner import run_agent
    from tests.fakes.llm_servers import error

    case = case_create(actor=lena, case_type="fraud_alert", title="Refused by the model")
    fake_openai.default = error(400, "bad request")
    result = run_agent(AGENTS[0], dict(INPUT), metadata={"case": case.reference})
    assert result.error_type == "validation"
    charging.flush()  # the release was sent without waiting: let it land
    budget = CaseBudget.objects.get(case=case)
    assert budget.reserved_musd == 0 and budget.reserved_tokens == 0 and budget.spent_musd == 0
