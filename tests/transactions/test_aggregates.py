"""Velocity and aggregates in the rule language (issue 47 part A): the syntax and its 400s,
card testing caught from the sixth authorisation through ingest, live ingest and the
back-test replaying a stream to the same hits, the rebuild reproducing the counters, and a
30-day read costing the same rows at 10^3 and 10^5 transactions of history. Every clock is
the transactions' own timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from casework.cases.models import Case
from casework.transactions import aggregates, rules
from casework.transactions.aggregates.buckets import bucket_count, cover, epoch
from casework.transactions.aggregates.models import AggregateBucket, AggregateDistinct, AggregateSeries
from casework.transactions.backtest import backtest
from casework.transactions.ingest import rule_row, transactions_import
from casework.transactions.models import Transaction
from casework.transactions.monitoring.models import CardCase, RuleHit
from casework.transactions.monitoring.services import rule_create, rule_version_approve

pytestmark = pytest.mark.django_db

WHEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CARD_TESTING = [{"agg": {"fn": "count", "by": "card", "window": "10m",
                         "where": [{"field": "amount", "op": "lte", "value": 5}]}, "op": "gte", "value": 6}]


def txn(tid: str, at: datetime, *, card: str = "CARD-1", amount: str = "1.00", **extra) -> dict:
    return {"transaction_id": tid, "account_id": card, "card_last4": "4242", "amount": amount, "currency": "EUR",
            "merchant": "Digital goods", "mcc": "5815", "country": "NL", "channel": "ecommerce",
            "occurred_at": at.isoformat(), "home_country": "NL", **extra}


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def running(author, approver, conditions, *, name="Card testing", action="block", mode="live"):
    version = rule_create(actor=author, name=name, action=action, mode=mode, conditions=conditions)
    return rule_version_approve(actor=approver, version=version)


# --- the syntax ------------------------------------------------------------------------------

@pytest.mark.parametrize(("condition", "says"), [
    ({"agg": {"fn": "count", "by": "card", "window": "91d"}, "op": "gte", "value": 3}, "1m to 90d"),
    ({"agg": {"fn": "count", "by": "card", "window": "10s"}, "op": "gte", "value": 3}, "number and m, h or d"),
    ({"agg": {"fn": "count", "by": "phone", "window": "1h"}, "op": "gte", "value": 3}, "agg.by"),
    ({"agg": {"fn": "avg", "of": "device", "by": "card", "window": "1h"}, "op": "gte", "value": 3}, "of amount"),
    ({"agg": {"fn": "count_distinct", "by": "card", "window": "1h"}, "op": "gte", "value": 3}, "needs 'of'"),
    ({"agg": {"fn": "count", "by": "card", "window": "1h"}, "op": "in", "value": [3]}, "an aggregate takes"),
    ({"agg": {"fn": "count", "by": "card", "window": "1h"}, "op": "gte", "value": "many"}, "compares with a number"),
    ({"field": "mcc", "op": "eq", "than": {"agg": {"fn": "count", "by": "card", "window": "1h"}}}, "not a number"),
    ({"field": "amount", "op": "gt", "than": {"agg": {"fn": "avg", "by": "card", "window": "30d"}, "times": 0}},
     "than.times"),
    ({"agg": {"fn": "count", "by": "card", "window": "1h", "where": [
        {"agg": {"fn": "count", "by": "card", "window": "1h"}, "op": "gte", "value": 1}]}, "op": "gte", "value": 1},
     "no aggregate in a filter"),
    ({"agg": {"fn": "count", "by": "card", "window": "1h", "eval": "1"}, "op": "gte", "value": 1}, "agg.eval"),
])
def test_a_bad_aggregate_is_a_400_naming_the_field(alice, condition, says):
    response = client_for(alice).post("/api/transactions/rules/", {
        "name": "Velocity", "action": "review", "mode": "shadow", "conditions": [condition]}, format="json")
    assert response.status_code == 400, response.json()
    assert says in str(response.json()["conditions"]), response.json()


def test_the_aggregate_forms_are_stored_as_written_and_described(alice):
    conditions = [
        {"agg": {"fn": "count_distinct", "of": "device", "by": "account", "window": "7d"}, "op": "gte", "value": 3},
        {"field": "amount", "op": "gt", "than": {"agg": {"fn": "avg", "of": "amount", "by": "card", "window": "30d",
                                                          "current": False}, "times": 3}},
        {"field": "amount", "op": "gte", "value": 100},
    ]
    response = client_for(alice).post("/api/transactions/rules/", {
        "name": "Velocity", "action": "review", "mode": "shadow", "conditions": conditions}, format="json")
    assert response.status_code == 201, response.json()
    stored = response.json()["versions"][0]["conditions"]
    assert stored[2] == {"field": "amount", "op": "gte", "value": 100}
    assert stored[1]["than"]["times"] == 3 and stored[1]["than"]["agg"]["current"] is False
    assert rules.describe(stored) == ("count_distinct(device, account, 7d) ≥ 3 and amount > 3 × "
                                      "avg(amount, card, 30d, before this one) and amount ≥ 100")


@pytest.mark.parametrize("window", [60, 600, 3600, 3601, 86400, 7 * 86400, 7 * 86400 + 1, 30 * 86400, 90 * 86400])
def test_a_window_is_covered_once_without_gaps_from_its_rounded_start_to_its_minute(window):
    import random

    from casework.transactions.aggregates.buckets import MINUTE, granularity

    rng = random.Random(window)
    for _ in range(200):
        t = epoch(WHEN) + rng.randrange(0, 400 * 86400)
        g = granularity(window)
        cur = (t - window) // g * g
        for size, first, last in cover(t, window):
            assert first == cur and first % size == 0 and (last - first) % size == 0
            cur = last + size
        assert cur == t // MINUTE * MINUTE + MINUTE  # up to the end of the transaction's own minute


def test_the_window_reads_few_buckets_at_any_length():
    t = epoch(WHEN) + 17 * 60 + 25
    assert bucket_count(cover(t, 600)) == 11  # whole minutes, the transaction's own included
    assert bucket_count(cover(t, 90 * 86400)) <= 90 + 24 + 60 + 24
    assert len(cover(t, 90 * 86400)) <= 5


# --- card testing through ingest ------------------------------------------------------------

def test_card_testing_blocks_from_the_sixth_authorisation_and_opens_one_case(
        alice, mona, django_capture_on_commit_callbacks):
    version = running(alice, mona, CARD_TESTING)
    api = client_for(alice)
    # 12 authorisations of 1 EUR in 3 minutes, one at a time as they come (15 s apart).
    for n in range(12):
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/transactions/", {"transactions": [
                txn(f"TX-{n + 1}", WHEN + timedelta(seconds=15 * n))]}, format="json")
        assert response.status_code == 201, response.json()
    hits = RuleHit.objects.filter(version=version).order_by("transaction__occurred_at")
    assert [h.transaction.transaction_id for h in hits] == [f"TX-{n}" for n in range(6, 13)]
    assert {h.action for h in hits} == {"block"}
    assert Case.objects.filter(case_type="transaction_investigation").count() == 1
    assert CardCase.objects.filter(current=True).count() == 1
    assert hits.filter(opened_case=True).get().transaction.transaction_id == "TX-6"
    # Each transaction keeps what the rule read when it arrived.
    key = rules.parse(CARD_TESTING)[0].agg.key
    assert [t.aggregates[key] for t in Transaction.objects.order_by("occurred_at")] == list(range(1, 13))
    sixth = Transaction.objects.get(transaction_id="TX-6")
    assert rules.explain(rules.parse(CARD_TESTING), {"agg": sixth.aggregates}) == (
        "count(card, 10m where amount ≤ 5) = 6 ≥ 6")


def test_one_batch_gives_each_transaction_the_count_as_of_itself(alice, mona, django_capture_on_commit_callbacks):
    version = running(alice, mona, CARD_TESTING)
    rows = [txn(f"TX-{n + 1}", WHEN + timedelta(seconds=15 * n)) for n in range(12)]
    with django_capture_on_commit_callbacks(execute=True):
        transactions_import(actor="system", rows=list(reversed(rows)))  # out of order within the batch
    hits = RuleHit.objects.filter(version=version)
    assert sorted(int(h.transaction.transaction_id[3:]) for h in hits) == list(range(6, 13))
    assert Case.objects.filter(case_type="transaction_investigation").count() == 1


# --- live ingest and the back-test agree ------------------------------------------------------

def stream() -> list[dict]:
    """Four cards over six hours: ordinary spending, a burst, a device shared across cards,
    a big purchase against a card's own average; in time order."""
    rows, n = [], 0
    for card in range(4):
        for k in range(10):
            n += 1
            rows.append(txn(f"S-{n}", WHEN + timedelta(minutes=35 * k + 7 * card), card=f"CARD-{card}",
                            amount=f"{20 + 3 * k + card}.00", device_id=f"dev-{card}", ip_address="10.0.0.1"))
    for k in range(7):  # a burst of small ones on card 1, from a new device
        n += 1
        rows.append(txn(f"S-{n}", WHEN + timedelta(hours=2, seconds=40 * k), card="CARD-1", amount="2.00",
                        device_id="dev-x", auth_result="declined" if k % 2 else "approved"))
    n += 1
    rows.append(txn(f"S-{n}", WHEN + timedelta(hours=5), card="CARD-2", amount="400.00", device_id="dev-x"))
    n += 1
    rows.append(txn(f"S-{n}", WHEN + timedelta(hours=5, minutes=1), card="CARD-3", amount="90.00",
                    device_id="dev-x"))
    return sorted(rows, key=lambda r: r["occurred_at"])


VELOCITY_RULES = {
    "burst": [{"agg": {"fn": "count", "by": "card", "window": "5m"}, "op": "gte", "value": 4}],
    "declines": [{"agg": {"fn": "count", "by": "card", "window": "1h",
                          "where": [{"field": "auth_result", "op": "eq", "value": "declined"}]},
                  "op": "gte", "value": 2}],
    "spend": [{"agg": {"fn": "sum", "of": "amount", "by": "account", "window": "2h"}, "op": "gte", "value": 100}],
    "big for the card": [{"field": "amount", "op": "gt", "than": {
        "agg": {"fn": "avg", "of": "amount", "by": "card", "window": "30d", "current": False}, "times": 3}}],
    "shared device": [{"agg": {"fn": "count_distinct", "of": "card", "by": "device", "window": "1d"},
                       "op": "gte", "value": 2}],
    "ip cards": [{"agg": {"fn": "count_distinct", "of": "account", "by": "ip", "window": "3h"},
                  "op": "gte", "value": 3}, {"field": "amount", "op": "gte", "value": 40}],
}


def test_live_ingest_and_the_back_test_give_the_same_hits(alice, mona, django_capture_on_commit_callbacks):
    versions = {name: running(alice, mona, conditions, name=name, action="review", mode="shadow")
                for name, conditions in VELOCITY_RULES.items()}
    rows = stream()
    for start in range(0, len(rows), 5):  # batches of five, as a feed would send them
        with django_capture_on_commit_callbacks(execute=True):
            transactions_import(actor="system", rows=rows[start:start + 5])
    for name, conditions in VELOCITY_RULES.items():
        live = list(RuleHit.objects.filter(version=versions[name]).order_by("transaction__occurred_at", "transaction__id")
                    .values_list("transaction__transaction_id", flat=True))
        replayed = backtest(conditions, until=WHEN + timedelta(days=1))
        assert live, name  # every rule hits something: the comparison means something
        assert replayed["fired_transaction_ids"] == live, (name, " ".join(replayed["fired_transaction_ids"]), " ".join(live))
        assert replayed["fired"] == len(live)


def test_the_back_test_reads_no_transaction_after_the_one_it_scores(alice, mona):
    """No look-ahead: the burst's first three transactions do not fire a rule that needs four,
    though the whole burst is in the history when the back-test runs."""
    transactions_import(actor="system", rows=stream())
    report = backtest(VELOCITY_RULES["burst"], until=WHEN + timedelta(days=1))
    burst = [r["transaction_id"] for r in stream() if r["amount"] == "2.00"]
    assert report["fired_transaction_ids"] == burst[3:]


# --- the counters: rebuilt exactly, read in bounded rows --------------------------------------

def table():
    return (sorted(AggregateBucket.objects.values_list("series", "grp", "size", "start", "n", "cents")),
            sorted(AggregateDistinct.objects.values_list("series", "grp", "size", "start", "value")))


def test_the_rebuild_reproduces_the_counters_kept_on_ingest(alice, mona):
    for name, conditions in VELOCITY_RULES.items():
        running(alice, mona, conditions, name=name, action="review", mode="shadow")
    rows = stream()
    # Older history too: part of it falls out of every window and is pruned.
    rows = [txn(f"OLD-{n}", WHEN - timedelta(days=100 - n), card="CARD-1", amount="15.00") for n in range(20)] + rows
    for start in range(0, len(rows), 7):
        transactions_import(actor="system", rows=rows[start:start + 7])
    aggregates.prune()
    kept = table()
    assert len(kept[0]) > 100 and kept[1]
    AggregateBucket.objects.update(n=0)  # damage them: the rebuild reads the transactions
    AggregateDistinct.objects.all().delete()
    call_command("aggregates_rebuild")
    assert table() == kept
    call_command("aggregates_rebuild", "--check")  # and a check finds nothing to change


def test_a_rule_approved_after_the_history_counts_it_and_a_disabled_one_drops_its_counters(alice, mona):
    from casework.transactions.monitoring.services import rule_disable

    burst_end = WHEN + timedelta(hours=2, minutes=4)
    transactions_import(actor="system", rows=[r for r in stream() if r["occurred_at"] <= burst_end.isoformat()])
    version = running(alice, mona, VELOCITY_RULES["burst"], name="burst")
    assert AggregateSeries.objects.count() == 1 and AggregateSeries.objects.get().built_at is not None
    agg = rules.parse(VELOCITY_RULES["burst"])[0].agg
    # The next one on the burst's card counts the burst from the counters built at approval.
    [late] = transactions_import(actor="system", rows=[txn("S-next", burst_end + timedelta(seconds=20),
                                                            card="CARD-1", amount="2.00")])
    assert late.aggregates == {agg.key: 8}
    assert aggregates.value(agg, rule_row(late), counted=True) == 8  # read later: it is stored already
    assert aggregates.value(agg, rule_row(late)) == 9  # as if a ninth arrived
    rule_disable(actor=mona, rule=version.rule)
    assert not AggregateSeries.objects.exists() and not AggregateBucket.objects.exists()


def test_a_rule_activated_after_its_transactions_arrived_reads_the_counters_when_evaluated(alice, mona):
    """The sweep evaluates transactions stored before the rule ran: their snapshot lacks its
    aggregate, read then from the counters built at approval (which count them already, so
    they are not added again)."""
    from casework.transactions.monitoring.evaluate import transactions_evaluate

    stored = transactions_import(actor="system", rows=stream())  # no evaluation yet (no commit here)
    assert all(t.aggregates == {} for t in stored)
    version = running(alice, mona, [{"agg": {"fn": "count", "by": "card", "window": "1d"}, "op": "gte", "value": 17}],
                      name="busy card", action="review", mode="shadow")
    transactions_evaluate([t.pk for t in stored], now=WHEN + timedelta(days=1))
    # CARD-1 has 17 transactions that day (10 ordinary, 7 in the burst): each reads the window
    # ending with its own minute, so only its last one sees 17, as the back-test says.
    hits = list(RuleHit.objects.filter(version=version).values_list("transaction__transaction_id", flat=True))
    last = max((r for r in stream() if r["account_id"] == "CARD-1"), key=lambda r: r["occurred_at"])
    assert hits == [last["transaction_id"]]
    assert backtest(version.conditions, until=WHEN + timedelta(days=1))["fired_transaction_ids"] == hits


@pytest.mark.parametrize("history", [1_000, 100_000])
def test_a_30_day_read_touches_the_same_rows_at_any_history_size(history):
    agg = rules.Aggregate.model_validate({"fn": "sum", "of": "amount", "by": "card", "window": "30d"})
    series = aggregates.counters.series_of(agg)
    AggregateSeries.objects.create(key=series.key, definition=agg.series, created_at=WHEN)
    # `history` transactions on one card over 60 days, counted as ingest counts them.
    start = WHEN - timedelta(days=60)
    step = timedelta(days=60) / history
    rows = [rules.row_of(amount=10, mcc="5411", country="NL", channel="pos", occurred_at=start + step * i,
                         home_country="NL", account=1, card_last4="4242") for i in range(history)]
    store = aggregates.counters.DbStore()
    store.load([series], rows[:1])
    for row in rows:
        store.add(series, row)
    store.flush()
    now = rules.row_of(amount=10, mcc="5411", country="NL", channel="pos", occurred_at=WHEN, home_country="NL",
                       account=1, card_last4="4242")
    reader = aggregates.counters.DbStore()
    with CaptureQueriesContext(connection) as queries:
        total = aggregates.value(agg, now, reader)
    assert len(queries) == 1
    assert reader.rows_read <= 31 + 24 + 60  # days, then the day's hours, then the hour's minutes
    in_window = sum(1 for r in rows if r["occurred_at"] >= WHEN - timedelta(days=31))
    assert total >= 10 * in_window * 29 / 31 and total <= 10 * (in_window + 1)
