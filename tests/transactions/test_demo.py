from __future__ import annotations

from collections import Counter

import pytest

from casework.cases.demo import DEMO_LOADERS
from casework.cases.models import Decision
from casework.transactions.demo import SCENARIOS, demo_load_transactions
from casework.transactions.models import Investigation, RuleDraft, Transaction

pytestmark = pytest.mark.django_db(transaction=True)


def test_seed_demo_uses_the_transactions_loader():
    assert DEMO_LOADERS["transaction_investigation"] is demo_load_transactions


def test_the_demo_runs_sixteen_investigations_in_every_status_once(alice, admin_user, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # as under `make run`: the loader runs them itself
    assert demo_load_transactions(users={"alice": alice, "admin": admin_user}) == len(SCENARIOS) == 16

    assert 3000 <= Transaction.objects.count() <= 5000
    statuses = Counter(Investigation.objects.values_list("status", flat=True))
    assert set(statuses) == {"COMPLETED", "TIMED_OUT", "FAILED", "PENDING", "IN_PROGRESS"}, statuses
    assert statuses["COMPLETED"] == 12
    assert Counter(Decision.objects.values_list("outcome", flat=True)) == {"fraud": 3, "not_fraud": 2,
                                                                          "inconclusive": 1}
    assert RuleDraft.objects.filter(status="promoted").count() == 1
    assert Transaction.objects.filter(is_fraud=True).count() == 3  # the three decided fraud
    later = Investigation.objects.get(transaction__transaction_id__startswith="TX-1007")
    assert any(m["outcome"] == "fraud" for m in later.state["similarity_results"]["matches"])
    new_card = Investigation.objects.get(transaction__account__account_id="CARD-1012")
    assert "similarity_tool" not in new_card.state["completed_steps"]

    assert demo_load_transactions(users={"alice": alice}) == 0


def test_the_demo_killed_run_is_resumed_by_the_sweeper_with_one_execution_per_tool(alice):
    from django.utils import timezone

    from agents.models import AgentRun
    from agents.tasks import resume_stale_runs
    from casework.transactions.models import ToolExecution

    demo_load_transactions(users={"alice": alice})
    killed = Investigation.objects.get(status="IN_PROGRESS")
    run = AgentRun.objects.get(case=killed.case)
    assert run.status == "running" and killed.state["step_count"] == 3
    AgentRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now().replace(year=2000))

    assert resume_stale_runs() >= 1  # eager Celery: the re-delivered run resumes here

    killed.refresh_from_db()
    assert killed.status == "COMPLETED", killed.error
    assert ToolExecution.objects.filter(investigation=killed).count() == len(killed.state["completed_steps"]) == 6


def test_the_demo_failed_investigation_offers_resume_and_resuming_finishes_it(alice_client, alice):
    from django.db import transaction

    from casework.transactions.services import investigation_resume

    demo_load_transactions(users={"alice": alice})
    failed = Investigation.objects.get(status="FAILED")
    page = alice_client.get(f"/cases/{failed.case.reference}/").content.decode()
    assert "Injected failure after 2 planner steps" in page and "Resume the investigation" in page

    with transaction.atomic():
        investigation_resume(actor=alice, investigation=failed)
    failed.refresh_from_db()
    assert failed.status == "COMPLETED", failed.error
    assert failed.state["planner_decisions"][0]["step"] == 1 and failed.state["step_count"] > 2
