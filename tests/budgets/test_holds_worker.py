"""A killed worker's budget reservations are given back (casework/budgets/holds.py).

A real Celery worker (`celery -A casework worker`, through the broker) runs the access pipeline
against the fake OpenAI server, which holds every request unanswered: the worker's calls are in
flight, their estimates (and on PostgreSQL its lease) reserved in the case's ledger and recorded
as the worker's hold. The worker is killed (SIGKILL). The sweep gives the hold back to the case,
audited on its timeline; the ledger holds nothing more.

A frozen worker (SIGSTOP: its pid still runs, it renews nothing) keeps its hold while the
clock says it may still be alive, and loses it once it has not renewed for
CASE_BUDGET_HOLD_STALE_SECONDS (the clock injected); woken up (SIGCONT) and answered, its calls
settle their spend and give back nothing twice: the case's reserved stays the sum of its holds.

The only waits are for things to happen (calls in flight, the run to end), bounded by a guard."""

from __future__ import annotations

import json
import os
import signal
import threading
from datetime import timedelta

import pytest
from django.db.models import Sum
from django.utils import timezone

from agents.models import AgentRun
from audit.models import AuditEntry
from casework.budgets.holds import holds_release_gone
from casework.budgets.models import BudgetHold, CaseBudget
from tests.access.conftest import mark, org, submit  # noqa: F401 - fixtures
from tests.budgets.conftest import FAKE_PRICE
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture
from tests.fakes.offline_model import OfflineModel
from tests.ops.test_worker_metrics import start_worker, wait_for  # noqa: F401 - fixture

DEADLINE_SECONDS = 90  # a failure guard only


class HeldModel(OfflineModel):
    """The offline analysts, each answer held back until `answer` is set (or the test ends)."""

    def __init__(self, server):
        super().__init__(server)
        self.answer = threading.Event()

    def __call__(self, body: dict):
        self.answer.wait(DEADLINE_SECONDS)
        return super().__call__(body)


@pytest.fixture
def held_worker(start_worker, fake_openai, settings):  # noqa: F811 - fixtures
    settings.CASE_BUDGETS_ENABLED = True
    settings.LLM_PRICES = FAKE_PRICE
    model = HeldModel(fake_openai)
    env = {"LLM_PROVIDER": "openai", "OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": "test",
           "LLM_MODEL": "fake-model", "LLM_PRICES": json.dumps(FAKE_PRICE), "CASE_BUDGETS_ENABLED": "true",
           "AGENT_APPROVALS": json.dumps({"send_notification": {"*": "never"}}), "ACCESS_RETRY_COUNTDOWNS": "0"}
    yield start_worker(**env), model
    model.answer.set()  # the server's threads let go of what they held


def held(case) -> tuple[int, int]:
    total = BudgetHold.objects.filter(case=case).aggregate(musd=Sum("reserved_musd"), tokens=Sum("reserved_tokens"))
    return total["musd"] or 0, total["tokens"] or 0


def reserved(case) -> tuple[int, int]:
    return tuple(CaseBudget.objects.filter(case=case).values_list("reserved_musd", "reserved_tokens").get())


def calls_in_flight(worker, fake_openai, submit):  # noqa: F811
    mutation = submit()  # committed: its investigation goes through the broker to the worker
    case = mutation.case
    wait_for(lambda: fake_openai.in_flight and BudgetHold.objects.filter(case=case, reserved_tokens__gt=0).exists(),
             [worker], "The worker's calls did not reach the endpoint", DEADLINE_SECONDS)
    return case


def test_a_killed_worker_s_reservations_are_given_back_to_its_case_audited(held_worker, fake_openai, submit):  # noqa: F811
    worker, _ = held_worker
    case = calls_in_flight(worker, fake_openai, submit)
    (hold,) = BudgetHold.objects.filter(case=case)
    assert hold.pid == worker.proc.pid
    # The case's reserved is what the worker holds: its calls in flight (and lease).
    assert reserved(case) == held(case) == (hold.reserved_musd, hold.reserved_tokens) and hold.reserved_tokens > 0
    assert holds_release_gone() == 0  # alive: kept

    worker.stop()  # SIGKILL: its calls never settle

    assert holds_release_gone() == 1
    assert reserved(case) == (0, 0)
    assert not BudgetHold.objects.exists()
    entry = AuditEntry.objects.get(case_id=case.pk, action="budget.hold_released")
    assert entry.actor == "system"
    assert entry.data["pid"] == hold.pid and entry.data["why"] == "process gone"
    assert entry.data["reserved_tokens"] == hold.reserved_tokens
    assert holds_release_gone() == 0  # nothing twice


def test_a_frozen_worker_loses_its_hold_only_past_the_deadline_and_gives_back_nothing_twice(
        held_worker, fake_openai, submit, settings):  # noqa: F811
    worker, model = held_worker
    case = calls_in_flight(worker, fake_openai, submit)
    (hold,) = BudgetHold.objects.filter(case=case)
    os.kill(worker.proc.pid, signal.SIGSTOP)
    try:
        stale = timedelta(seconds=settings.CASE_BUDGET_HOLD_STALE_SECONDS)
        assert holds_release_gone(now=hold.renewed_at + stale - timedelta(seconds=1)) == 0  # may be alive
        assert holds_release_gone(now=timezone.now() + stale + timedelta(seconds=1)) == 1
        assert reserved(case) == (0, 0) and not BudgetHold.objects.exists()
        entry = AuditEntry.objects.get(case_id=case.pk, action="budget.hold_released")
        assert entry.data["why"] == "not renewed"
    finally:
        os.kill(worker.proc.pid, signal.SIGCONT)

    model.answer.set()  # woken up, its calls are answered and the run goes on to its end
    run = wait_for(lambda: AgentRun.objects.filter(case=case).exclude(status__in=[*AgentRun.ACTIVE]).first(),
                   [worker], "The run did not end", DEADLINE_SECONDS)
    assert run.status in (AgentRun.Status.WAITING, AgentRun.Status.COMPLETED), (run.status, run.error, worker.log())
    # Its calls settled their spend; what the sweep gave back was not given back again (the
    # ledger would hold less than its holds, or refuse the settlement as negative).
    budget = CaseBudget.objects.get(case=case)
    wait_for(lambda: CaseBudget.objects.get(case=case).calls >= len(model.agents), [worker],
             "The calls' settlements were not written", DEADLINE_SECONDS)
    budget.refresh_from_db()
    assert budget.spent_tokens > 0 and budget.calls == len(model.agents)
    assert reserved(case) == held(case)
