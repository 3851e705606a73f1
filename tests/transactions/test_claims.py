"""Transaction investigations say what is true (issue 43): a run stopped at the step limit is
not "Completed" (and may be resumed), no severity is claimed before something was analysed,
and a promoted rule reads as the proposal in shadow mode it is until another manager approves."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from casework.cases.dashboard import selectors as dashboard
from casework.transactions.models import Investigation
from casework.transactions.services import investigation_resume, rule_promote
from tests.conftest import in_every_team
from tests.transactions.conftest import investigate, load

pytestmark = pytest.mark.django_db(transaction=True)


def _agreement():
    return next((row for row in dashboard.agreement(timezone.now())["rows"]
                 if row.type_label == "Transaction investigation"), None)


def test_an_investigation_stopped_at_the_step_limit_before_any_analysis_is_not_completed_and_resumes(
        api, alice, settings):
    from django.db import transaction

    settings.TXN_MAX_STEPS = 1  # the first planner decision reaches the limit: no tool runs
    investigation = investigate(load("card_testing"))
    assert investigation.state["completed_steps"] == []
    assert investigation.status != "COMPLETED" and "step limit" in investigation.error
    assert investigation.is_resumable
    body = api.get(f"/api/transactions/investigations/{investigation.case.reference}/").json()
    assert body["severity"] is None
    investigation.case.refresh_from_db()
    assert investigation.case.priority == "medium"  # nothing analysed: no priority claimed

    # Resumed with a fresh budget, it finishes the work.
    settings.TXN_MAX_STEPS = 20
    with transaction.atomic():  # the resumed run starts at the commit
        investigation_resume(actor=alice, investigation=investigation)
    investigation = Investigation.objects.get(pk=investigation.pk)
    assert investigation.status == "COMPLETED" and investigation.severity in ("HIGH", "CRITICAL")
    assert api.get(f"/api/transactions/investigations/{investigation.case.reference}/").json()["severity"] \
        == investigation.severity


def test_a_step_limited_investigation_counts_as_no_recommendation_on_the_dashboard(alice, settings):
    from casework.cases.services import case_close

    settings.TXN_MAX_STEPS = 1
    investigation = investigate(load("ordinary"))
    case_close(actor=alice, case=investigation.case, outcome="not_fraud", reason="Checked by hand.")
    row = _agreement()
    assert row.decided == 1 and row.with_recommendation == 0


def test_the_api_claims_no_severity_for_a_pending_or_inconclusive_investigation(api, alice, monkeypatch):
    from django.db import transaction

    from casework.transactions.agents import tools
    from casework.transactions.services import investigation_start

    txn = load("card_testing")
    # Pending: started, its run not yet picked up (the transaction has not committed).
    with transaction.atomic():
        pending = investigation_start(actor=alice, transaction_id=txn)
        body = api.get(f"/api/transactions/investigations/{pending.case.reference}/").json()
        transaction.set_rollback(True)
    assert body["status"] == "PENDING" and body["severity"] is None

    def no_context(args):
        raise RuntimeError("the card store is down")

    monkeypatch.setitem(tools.HANDLERS, "context_tool", no_context)
    inconclusive = investigate(txn)
    assert inconclusive.status == "INCONCLUSIVE"
    body = api.get(f"/api/transactions/investigations/{inconclusive.case.reference}/").json()
    assert body["severity"] is None


def test_a_promoted_rule_reads_as_a_proposal_in_shadow_until_another_manager_approves_it(
        alice_client, admin_user, mona, api):
    from casework.transactions.monitoring.models import RuleVersion
    from casework.transactions.monitoring.services import rule_version_approve

    investigation = investigate(load("card_testing"))
    reference = investigation.case.reference
    rule_promote(actor=admin_user, rule=investigation.rule_draft)
    page = alice_client.get(reverse("cases:detail", args=[reference])).content.decode()
    badge = page.split('data-testid="rule-status"')[0].rsplit("<span", 1)[1] + \
        page.split('data-testid="rule-status"')[1].split("</span>")[0]
    assert "Promoted" not in badge and "badge-ok" not in badge
    assert "shadow" in badge.lower() and "awaiting approval" in badge.lower()
    assert api.get(f"/api/transactions/investigations/{reference}/").json()["rule_draft"]["monitoring"] == "proposed"

    in_every_team(mona)
    rule_version_approve(actor=mona, version=RuleVersion.objects.get(rule__drafted_from=investigation.rule_draft))
    page = alice_client.get(reverse("cases:detail", args=[reference])).content.decode()
    badge = page.split('data-testid="rule-status"')[1].split("</span>")[0]
    assert "approved" in badge.lower() and "shadow" in badge.lower()
