"""A gone process's hold frees the headroom its case's waiting run needs (casework/budgets/holds.py).

A real process (`python -c`, Django set up on this test's database) reserves five calls' worth
of a case's ten through the charger, then kills itself (SIGKILL): its reservations stay in the
ledger, recorded as its hold. A pipeline run on the case then passes five calls and waits in
"Budget reached". The sweep gives the dead process's hold back, audited, and the run goes back
to the queue without a lead (the headroom came back): it makes five more calls, and waits again
at the budget, which its calls have now spent to the µ$. Counted, never timed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import transaction

from agents.models import AgentRun
from agents.runtime import charging
from agents.tasks import pipeline_enqueue
from audit.models import AuditEntry
from casework.budgets.holds import holds_release_gone
from casework.budgets.models import BudgetHold, CaseBudget
from casework.cases.services import case_create
from tests.budgets.conftest import FAKE_PRICE
from tests.budgets.test_reservation import AGENTS, endpoint, one_call_estimate, ten_calls_budget  # noqa: F401
from tests.ops.test_worker_metrics import _test_database_url

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
RESERVE_AND_DIE = """
import os, signal, sys
import django
django.setup()
from agents.runtime.charging import ReserveRequest
from casework.budgets.ledger import BudgetCharger
reference, calls, prompt, most = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
request = ReserveRequest(case=reference, provider="openai", model="fake-model", input_tokens=prompt,
                         max_output_tokens=most)
results = BudgetCharger().reserve_many([request] * calls)
assert all(r is not None and not isinstance(r, Exception) for r in results), results
print(os.getpid(), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def reserve_in_a_process_that_dies(case, calls: int) -> int:
    _, _, prompt = one_call_estimate()
    done = subprocess.run(
        [sys.executable, "-c", RESERVE_AND_DIE, case.reference, str(calls), str(prompt), str(AGENTS[0].max_tokens)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "DATABASE_URL": _test_database_url(), "LLM_PRICES": json.dumps(FAKE_PRICE)})
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr[-3000:])
    return int(done.stdout.split()[0])


def test_a_dead_process_s_hold_is_given_back_and_the_run_waiting_at_the_budget_goes_on(endpoint, lena):  # noqa: F811
    case = case_create(actor=lena, case_type="fraud_alert", title="Half held by a dead process")
    ten_calls_budget(lena, case)
    musd, tokens, _ = one_call_estimate()
    pid = reserve_in_a_process_that_dies(case, 5)
    (hold,) = BudgetHold.objects.filter(case=case)
    assert (hold.pid, hold.reserved_musd, hold.reserved_tokens) == (pid, 5 * musd, 5 * tokens)

    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_budget_fifty", mode="full", actor="system")
    run.refresh_from_db()
    charging.flush()
    assert run.status == AgentRun.Status.BUDGET_REACHED
    assert len(endpoint.requests) == 5  # the other five calls' worth is the dead process's

    assert holds_release_gone() == 1  # this process's own hold (its flushed calls) is not touched

    entry = AuditEntry.objects.get(case_id=case.pk, action="budget.hold_released")
    assert entry.data["pid"] == pid and entry.data["why"] == "process gone"
    assert entry.data["runs_resumed"] == [run.pk]
    run.refresh_from_db()
    charging.flush()
    # Resumed without a lead (eager here: the wake-up ran the run at once), five more calls
    # made, and at the budget again: the ten calls' worth is now spent, nothing held.
    assert len(endpoint.requests) == 10
    assert run.status == AgentRun.Status.BUDGET_REACHED
    budget = CaseBudget.objects.get(case=case)
    assert budget.spent_musd == 10 * musd == budget.limit_musd
    assert budget.reserved_musd == sum(BudgetHold.objects.filter(case=case).values_list("reserved_musd", flat=True))
    assert not BudgetHold.objects.filter(pid=pid).exists()
    actions = list(AuditEntry.objects.filter(case_id=case.pk).values_list("action", flat=True))
    assert actions.count("agent.run_resumed") == 1
