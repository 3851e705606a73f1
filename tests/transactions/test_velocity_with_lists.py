"""One rule language for issue 47's two parts: a rule that reads a velocity aggregate and a list
in one, decided at authorisation time (POST /api/transactions/decide), evaluated again by the
worker, and back-tested (the replay in time order with the lists prefetched) to the same hits.
Every clock is the transactions' own timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from casework.transactions import rules
from casework.transactions.backtest import backtest
from casework.transactions.decisions.api import DecideApi
from casework.transactions.monitoring.models import RuleHit
from casework.transactions.monitoring.services import rule_create, rule_version_approve

pytestmark = pytest.mark.django_db

WHEN = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
# A watched device used a third time on one card within 10 minutes.
WATCHED_BURST = [{"in_list": "watch-devices", "field": "device"},
                 {"agg": {"fn": "count", "by": "card", "window": "10m"}, "op": "gte", "value": 3}]


@pytest.fixture(autouse=True)
def counted_clock(settings, monkeypatch):
    """The budget counted in rules on a step clock, never in machine time (as test_decisions)."""
    from tests.transactions.test_decisions import StepClock

    settings.TXN_DECISION_BUDGET_MS = 1_000_000
    monkeypatch.setattr(DecideApi, "clock", staticmethod(StepClock()))


def txn(n: int, *, card: str, device: str) -> dict:
    return {"transaction_id": f"TX-{card}-{n}", "account_id": card, "card_last4": "4242", "amount": "20.00",
            "currency": "EUR", "merchant": "Web Shop", "mcc": "5999", "country": "NL", "channel": "ecommerce",
            "device_id": device, "occurred_at": (WHEN + timedelta(seconds=30 * n)).isoformat(), "home_country": "NL"}


def test_the_three_kinds_of_condition_parse_in_one_parser():
    parsed = rules.parse([*WATCHED_BURST, {"field": "amount", "op": "gte", "value": 10}])
    assert [type(c).__name__ for c in parsed] == ["ListCondition", "Condition", "Condition"]
    assert [a.describe() for a in rules.aggregates_of(parsed)] == ["count(card, 10m)"]
    assert rules.describe(WATCHED_BURST) == "device on list watch-devices and count(card, 10m) ≥ 3"


def test_a_rule_with_a_list_and_a_velocity_condition_decides_live_and_back_tests_to_the_same_hits(
        alice, mona, django_capture_on_commit_callbacks):
    from casework.transactions.lists.services import list_entry_add, value_list_create

    watch = value_list_create(actor=alice, name="watch-devices", kind="deny", field="device")
    list_entry_add(actor=alice, value_list=watch, value="dev-ring")
    # The list is a deny list: its own entry blocks at once, so the rule is tested on a second,
    # allow-kind list to see the velocity condition decide.
    seen = value_list_create(actor=alice, name="seen-devices", kind="allow", field="device")
    list_entry_add(actor=alice, value_list=seen, value="dev-shared")
    conditions = [{"in_list": "seen-devices", "field": "device"}, WATCHED_BURST[1]]
    version = rule_version_approve(actor=mona, version=rule_create(
        actor=alice, name="Shared device burst", action="block", mode="live", conditions=conditions))
    api = APIClient()
    api.force_authenticate(alice)
    answers = {}
    # Card A on the listed device, card B on another: five authorisations each, 30 s apart.
    for n in range(5):
        for card, device in (("CARD-A", "dev-shared"), ("CARD-B", "dev-other")):
            with django_capture_on_commit_callbacks(execute=True):
                body = api.post("/api/transactions/decide", txn(n, card=card, device=device), format="json").json()
            assert body["timed_out"] is False
            answers[body["transaction_id"]] = body["outcome"]
    # An allow-listed device waives review, never a live block rule: from the third on card A, block.
    assert [answers[f"TX-CARD-A-{n}"] for n in range(5)] == ["allow", "allow", "block", "block", "block"]
    assert {answers[f"TX-CARD-B-{n}"] for n in range(5)} == {"allow"}
    live = list(RuleHit.objects.filter(version=version).order_by("transaction__occurred_at")
                .values_list("transaction__transaction_id", flat=True))
    assert live == ["TX-CARD-A-2", "TX-CARD-A-3", "TX-CARD-A-4"]  # the worker's evaluation agrees
    replayed = backtest(conditions, until=WHEN + timedelta(days=1))
    assert replayed["fired_transaction_ids"] == live
    # A deny-listed device blocks at once, before any rule runs.
    with django_capture_on_commit_callbacks(execute=True):
        ring = api.post("/api/transactions/decide", txn(9, card="CARD-C", device="dev-ring"), format="json").json()
    assert ring["outcome"] == "block" and ring["hits"][0]["list"] == "watch-devices"
