"""Leases (PostgreSQL: agents.runtime.charging, _Lease): a case's calls in one process take
their reservations from a share of its headroom reserved in one statement, handed out in memory,
and the ledger comes out the same: after the calls everything reserved is given back and
exactly what they used is spent. A lease half handed out is refilled ahead, by a statement no
call waits for. Near the limit no lease is taken and none is refilled (tests/budgets/
test_reservation.py's fifty calls on ten calls' worth hold on PostgreSQL with leases on, and
the case here refuses exactly the call past its limit). Counted, never timed: the statements
the writer sends are counted, and between calls the test waits for the writer to be idle, so a
refill is written before the next call whatever the machine's speed."""

from __future__ import annotations

import asyncio
import os

import pytest
from django.db import connection

from agents.llm.base import Completion, LLMRequest, Message
from agents.runtime import aio, charging
from agents.runtime.runner import run_agent
from casework.budgets.ledger import BudgetCharger
from casework.budgets.models import BudgetHold, CaseBudget
from casework.cases.services import case_create
from tests.budgets.test_reservation import AGENTS, INPUT, endpoint, one_call_estimate  # noqa: F401 - fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="leases need PostgreSQL (the writer on the loop)"),
]


@pytest.fixture
def counted(monkeypatch):
    """What the writer sends: per reservation statement with calls waiting in it, how many; per
    statement with refills in it (alone, or beside waiting calls), its refills (reference, µ$,
    tokens)."""
    sent = {"reserved": [], "refills": []}
    leasing = BudgetCharger.areserve_leasing

    async def counted_leasing(self, conn, requests, before_fallback, lease_calls, refills=()):
        if requests:
            sent["reserved"].append(len(requests))
        if refills:
            sent["refills"].append(list(refills))
        return await leasing(self, conn, requests, before_fallback, lease_calls, refills)

    monkeypatch.setattr(BudgetCharger, "areserve_leasing", counted_leasing)
    return sent


def leased_case(lena, calls_worth: int):
    case = case_create(actor=lena, case_type="fraud_alert", title="Leased")
    musd, _, _ = one_call_estimate()
    CaseBudget.objects.filter(case=case).delete()
    CaseBudget.objects.create(case=case, case_type=case.case_type, limit_musd=calls_worth * musd, limit_tokens=None)
    return case


def test_a_case_s_calls_take_their_reservations_from_its_lease_refilled_ahead_and_the_ledger_adds_up(
        endpoint, lena, settings, counted):  # noqa: F811 - fixture
    settings.CASE_BUDGET_LEASE_CALLS = 4
    settings.CASE_BUDGET_LEASE_MAX_CALLS = 16
    settings.CASE_BUDGET_LEASE_IDLE_SECONDS = 3600  # given back by flush here, not by the clock
    case = leased_case(lena, 1000)
    musd, tokens, _ = one_call_estimate()

    for n in range(40):
        result = run_agent(AGENTS[0], dict(INPUT), metadata={"case": case.reference})
        assert result.ok, result.error
        if n == 0:
            (lease,) = charging._writer.leases.values()
            assert lease.musd == 4 * musd and lease.tokens == 4 * tokens  # four more calls' worth
        charging.flush(leases_keep=True)  # the writer idle: a refill asked for is written

    # One call waited for a statement: the first, whose statement took a lease of four calls
    # besides. Each time less than half of the lease was left, a refill twice the last (up to
    # sixteen calls) was written, which no call waited for: after the fourth call (one left,
    # eight more), the tenth (three left, sixteen more) and the 22nd and 38th (seven left).
    assert counted["reserved"] == [1]
    assert [[(ref, m // musd, t // tokens) for ref, m, t in rows] for rows in counted["refills"]] == [
        [(case.reference, 8, 8)], [(case.reference, 16, 16)], [(case.reference, 16, 16)],
        [(case.reference, 16, 16)]]
    (lease,) = charging._writer.leases.values()
    assert lease.musd == (1 + 4 + 8 + 16 * 3 - 40) * musd
    # What the ledger holds reserved is this process's hold (casework/budgets/holds.py): what is
    # left of the lease and the estimates of the calls it settled in memory, not yet written.
    (hold,) = BudgetHold.objects.filter(case=case)
    budget = CaseBudget.objects.get(case=case)
    assert (budget.reserved_musd, budget.reserved_tokens) == (hold.reserved_musd, hold.reserved_tokens)
    assert hold.reserved_musd == lease.musd + lease.settled_musd and hold.reserved_tokens == (
        lease.tokens + lease.settled_tokens)
    assert hold.pid == os.getpid()
    charging.flush()  # the leases are given back, the settlements written
    budget = CaseBudget.objects.get(case=case)
    assert budget.reserved_musd == 0 and budget.reserved_tokens == 0
    assert BudgetHold.objects.get(case=case).reserved_musd == 0
    assert budget.spent_musd == 40 * musd and budget.calls == 40 and budget.refused == 0
    assert charging._writer.leases == {}


def test_near_its_limit_a_case_s_lease_is_not_refilled_and_the_call_past_the_limit_is_refused(
        endpoint, lena, settings, counted):  # noqa: F811 - fixture
    """Twenty calls' worth, leases of four: a refill of eight must leave eight beside it, which
    this budget never does after the first lease; the leases run out, new ones are taken while
    they fit, then each call is reserved alone: exactly twenty calls are sent, the 21st refused."""
    settings.CASE_BUDGET_LEASE_CALLS = 4
    settings.CASE_BUDGET_LEASE_IDLE_SECONDS = 3600
    case = leased_case(lena, 20)
    musd, _, _ = one_call_estimate()

    results = []
    for _ in range(22):
        results.append(run_agent(AGENTS[0], dict(INPUT), metadata={"case": case.reference}))
        charging.flush(leases_keep=True)

    assert [r.ok for r in results] == [True] * 20 + [False] * 2
    assert "This case has reached its budget" in results[20].error
    assert len(endpoint.requests) == 20
    # Refills were asked for and refused by the ledger (no room for twice one beside it).
    assert counted["refills"] and len(counted["reserved"]) > 1
    charging.flush()
    budget = CaseBudget.objects.get(case=case)
    assert budget.reserved_musd == 0 and budget.spent_musd == 20 * musd == budget.limit_musd
    assert budget.calls == 20 and budget.refused >= 1


def test_a_refill_written_while_its_lease_goes_back_is_given_back_too(endpoint, lena, settings, counted):  # noqa: F811
    """The lease goes back (a call too large for what is left) while its refill's statement is
    on its way: what the refill reserved is given back as well, and the ledger holds nothing."""
    settings.CASE_BUDGET_LEASE_CALLS = 4
    settings.CASE_BUDGET_LEASE_IDLE_SECONDS = 3600
    case = leased_case(lena, 1000)

    class Model:
        name, model = "openai", "fake-model"

    small = LLMRequest(messages=[Message("user", "x")], max_tokens=10)
    large = LLMRequest(messages=[Message("user", "x")], max_tokens=100_000)
    answer = Completion(text="{}", input_tokens=5, output_tokens=5, model="fake-model")

    async def calls() -> None:
        first = await charging.areserve(case.reference, Model, small)  # through the writer: a lease
        await charging.asettle(first, Model, answer)
        writer = charging._writer
        (lease,) = writer.leases.values()
        while not lease.refilling:  # handed out until less than half is left
            await charging.asettle(await charging.areserve(case.reference, Model, small), Model, answer)
        await asyncio.sleep(0)  # the writer sends the refill and waits for its answer
        assert counted["refills"] and writer.task is not None and not writer.task.done()
        # The lease's last call's worth: still below half, its refill on its way, no second one.
        await charging.asettle(await charging.areserve(case.reference, Model, small), Model, answer)
        assert lease.refilling and writer.refills == []
        # Too large for what is left: the lease goes back, and this call waits for the writer.
        big = await charging.areserve(case.reference, Model, large)
        assert writer.leases.get(case.reference) is not lease
        await charging.asettle(big, Model, answer)

    aio.run(calls())
    charging.flush()
    budget = CaseBudget.objects.get(case=case)
    assert budget.reserved_musd == 0 and budget.reserved_tokens == 0
    assert budget.spent_tokens == 10 * budget.calls and budget.calls >= 6
    assert len(counted["refills"]) == 1
