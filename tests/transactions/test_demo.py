"""The transaction demo: the whole history, and eight of its sixteen investigations (one of
each kind: decided fraud and not fraud, a later look-alike, a new card, timed out, failed,
pending, killed), loaded once: every status, similar cases found, a failed investigation
that resumes, a killed run the sweeper resumes."""

from __future__ import annotations

from collections import Counter
from unittest import mock

import pytest
from django.db import transaction
from django.utils import timezone

from agents.models import AgentRun
from agents.tasks import resume_stale_runs
from casework.cases.demo import DEMO_LOADERS
from casework.cases.models import Decision
from casework.transactions.demo import SCENARIOS, demo_load_transactions
from casework.transactions.models import Investigation, RuleDraft, ToolExecution, Transaction
from casework.transactions.services import investigation_resume

pytestmark = pytest.mark.django_db(transaction=True)


def test_seed_demo_uses_the_transactions_loader():
    assert DEMO_LOADERS["transaction_investigation"] is demo_load_transactions


CARDS = {"CARD-1001", "CARD-1004", "CARD-1007", "CARD-1012", "CARD-1013", "CARD-1014", "CARD-1015", "CARD-1016"}


def test_the_demo_has_sixteen_investigations_of_every_kind():
    assert len(SCENARIOS) == 16
    kinds = {then if isinstance(then, str) else "decided" for _, _, then in SCENARIOS if then}
    assert kinds == {"decided", "new_card", "timed_out", "failed", "pending", "killed"}


def test_the_demo_runs_investigations_in_every_status_and_the_broken_ones_resume(
        alice, admin_user, alice_client):
    with mock.patch("agents.tasks.run_pipeline.delay"):  # no worker yet, as under `make run`: the loader runs them
        assert demo_load_transactions(users={"alice": alice, "admin": admin_user}, cards=CARDS) == 8

    assert 3000 <= Transaction.objects.count() <= 5000
    statuses = Counter(Investigation.objects.values_list("status", flat=True))
    assert statuses == {"COMPLETED": 4, "TIMED_OUT": 1, "FAILED": 1, "PENDING": 1, "IN_PROGRESS": 1}, statuses
    assert Counter(Decision.objects.values_list("outcome", flat=True)) == {"fraud": 1, "not_fraud": 1}
    assert RuleDraft.objects.filter(status="promoted").count() == 1
    assert Transaction.objects.filter(is_fraud=True).count() == 1  # the decided fraud
    later = Investigation.objects.get(transaction__transaction_id__startswith="TX-1007")
    assert any(m["outcome"] == "fraud" for m in later.state["similarity_results"]["matches"])
    new_card = Investigation.objects.get(transaction__account__account_id="CARD-1012")
    assert "similarity_tool" not in new_card.state["completed_steps"]
    assert demo_load_transactions(users={"alice": alice}) == 0  # idempotent

    # From here on the eager queue stands for the worker.
    # The failed one: the page offers Resume, and resuming finishes it.
    failed = Investigation.objects.get(status="FAILED")
    page = alice_client.get(f"/cases/{failed.case.reference}/").content.decode()
    assert "Injected failure after 2 planner steps" in page and "Resume the investigation" in page
    with transaction.atomic():
        investigation_resume(actor=alice, investigation=failed)
    failed.refresh_from_db()
    assert failed.status == "COMPLETED", failed.error

    # The timed-out one: two tools of a simulated 40 s each against its 60 s timeout, whatever
    # the machine's speed; it keeps what they found, and resuming finishes it.
    timed_out = Investigation.objects.get(status="TIMED_OUT")
    assert timed_out.state["completed_steps"] == ["context_tool", "pattern_tool"]
    assert "investigation timeout" in timed_out.error
    with transaction.atomic():
        investigation_resume(actor=alice, investigation=timed_out)
    timed_out.refresh_from_db()
    assert timed_out.status == "COMPLETED", timed_out.error
    assert ToolExecution.objects.filter(investigation=timed_out).count() == len(timed_out.state["completed_steps"])

    # The killed one: the sweeper re-delivers it once its heartbeat is stale; it resumes.
    killed = Investigation.objects.get(status="IN_PROGRESS")
    run = AgentRun.objects.get(case=killed.case)
    assert run.status == "running" and killed.state["step_count"] == 3
    AgentRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now().replace(year=2000))
    assert resume_stale_runs() >= 1
    killed.refresh_from_db()
    assert killed.status == "COMPLETED", killed.error
    assert ToolExecution.objects.filter(investigation=killed).count() == len(killed.state["completed_steps"]) == 6
