"""Seed 003's rule drafts use velocity: an investigation of a burst drafts a velocity
condition (the offline provider's run, deterministic), back-tested on the other cards'
history before anyone approves it, and approving it builds its counters."""

from __future__ import annotations

import pytest

from casework.transactions.aggregates.models import AggregateSeries
from casework.transactions.monitoring.models import RuleVersion
from casework.transactions.services import rule_promote
from tests.transactions.conftest import load

pytestmark = pytest.mark.django_db(transaction=True)


def test_card_testing_drafts_a_velocity_rule_on_small_charges_back_tested_on_another_card(
        run_investigation, mona, admin_user):
    other = load("card_testing", "CARD-7002")  # the same fraud on another card, earlier in the history
    investigation = run_investigation(load("card_testing"))

    assert investigation.status == "COMPLETED", investigation.error
    draft = investigation.rule_draft
    velocity = [c for c in draft.conditions if "agg" in c]
    assert velocity == [{"agg": {"fn": "count", "of": None, "by": "card", "window": "1h", "current": True,
                                 "where": [{"field": "amount", "op": "lte", "value": 5.0}]},
                         "op": "gte", "value": 2}], draft.conditions
    # The back-test replays the history: it leaves out the card it was drafted from and fires
    # on the other card's purchase after its test charges.
    assert draft.backtest["fired_transaction_ids"] == [other], draft.backtest
    assert draft.backtest["excluded"] > 0

    rule_promote(actor=mona, rule=draft)
    version = RuleVersion.objects.get(rule__drafted_from=draft)
    assert version.status == "proposed" and version.conditions[0]["agg"]["window"] == "1h"
    assert "back-test: Would have fired on 1 of" in version.note
    from casework.transactions.monitoring.services import rule_version_approve

    rule_version_approve(actor=admin_user, version=version)
    assert AggregateSeries.objects.get().built_at is not None


@pytest.mark.parametrize("kind", ["cash_out", "cnp_burst"])
def test_a_burst_drafts_a_count_on_the_card(run_investigation, kind):
    investigation = run_investigation(load(kind))
    assert investigation.status == "COMPLETED", investigation.error
    velocity = [c for c in investigation.rule_draft.conditions if "agg" in c]
    assert len(velocity) == 1 and velocity[0]["agg"]["fn"] == "count" and velocity[0]["agg"]["by"] == "card"
    assert velocity[0]["agg"]["where"] == [] and velocity[0]["value"] >= 3


def test_an_unusual_amount_without_a_burst_drafts_no_velocity(run_investigation):
    investigation = run_investigation(load("big_ticket"))
    draft = getattr(investigation, "rule_draft", None)
    assert draft is None or not any("agg" in c for c in draft.conditions)
