"""Leases (PostgreSQL: agents.runtime.charging, _Lease): a case's calls in one process take
their reservations from a share of its headroom reserved in one statement, handed out in memory,
and the ledger comes out the same: after the calls everything reserved is given back and
exactly what they used is spent. Near the limit no lease is taken (tests/budgets/
test_reservation.py's fifty calls on ten calls' worth hold on PostgreSQL with leases on).
Counted, never timed."""

from __future__ import annotations

import pytest
from django.db import connection

from agents.runtime import charging
from agents.runtime.runner import run_agent
from casework.budgets.ledger import BudgetCharger
from casework.budgets.models import CaseBudget
from casework.cases.services import case_create
from tests.budgets.test_reservation import AGENTS, INPUT, endpoint, one_call_estimate  # noqa: F401 - fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="leases need PostgreSQL (the writer on the loop)"),
]


def test_a_case_s_calls_take_their_reservations_from_its_lease_and_the_ledger_adds_up(
        endpoint, lena, settings, monkeypatch):  # noqa: F811 - fixture
    settings.CASE_BUDGET_LEASE_CALLS = 4
    settings.CASE_BUDGET_LEASE_IDLE_SECONDS = 3600  # given back by flush here, not by the clock
    statements = []
    leasing = BudgetCharger.areserve_leasing

    async def counted(self, conn, requests, before_fallback, lease_calls):
        statements.append(len(requests))
        return await leasing(self, conn, requests, before_fallback, lease_calls)

    monkeypatch.setattr(BudgetCharger, "areserve_leasing", counted)
    case = case_create(actor=lena, case_type="fraud_alert", title="Leased")
    musd, tokens, _ = one_call_estimate()
    CaseBudget.objects.filter(case=case).delete()
    CaseBudget.objects.create(case=case, case_type=case.case_type, limit_musd=1000 * musd, limit_tokens=None)

    for n in range(10):
        result = run_agent(AGENTS[0], dict(INPUT), metadata={"case": case.reference})
        assert result.ok, result.error
        if n == 0:
            (lease,) = charging._writer.leases.values()
            assert lease.musd == 4 * musd and lease.tokens == 4 * tokens  # four more calls' worth

    # The first call's statement took a lease of four calls besides; calls 2-5 were handed out of
    # it without a statement; the sixth took a new lease, for calls 7-10: two statements, ten calls.
    assert statements == [1, 1]
    charging.flush()  # the leases are given back, the settlements written
    budget = CaseBudget.objects.get(case=case)
    assert budget.reserved_musd == 0 and budget.reserved_tokens == 0
    assert budget.spent_musd == 10 * musd and budget.calls == 10 and budget.refused == 0
    assert charging._writer.leases == {}
