"""Decisions at authorisation time through POST /api/transactions/decide (issue 47): the
answer in the same request, lists that block at once, the latency budget on an injected
clock, the worker's full evaluation recorded on the decision, idempotency, bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.cases.models import Case
from casework.outbox.models import Action
from casework.transactions.decisions.api import DecideApi
from casework.transactions.models import Decision, Transaction
from casework.transactions.monitoring.models import RuleHit
from casework.transactions.monitoring.services import rule_create, rule_version_approve

pytestmark = pytest.mark.django_db

WHEN = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)


def txn(n: int, *, card: str = "CARD-1", amount: str = "1.00", device: str = "dev-1", **extra) -> dict:
    return {"transaction_id": f"TX-{card}-{n}", "account_id": card, "card_last4": "4242", "amount": amount,
            "currency": "EUR", "merchant": "Web Shop", "mcc": "5999", "country": "NL", "channel": "ecommerce",
            "device_id": device, "occurred_at": (WHEN + timedelta(seconds=15 * n)).isoformat(),
            "home_country": "NL", **extra}


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def running(author, approver, *, name: str, action: str = "review", mode: str = "live", conditions=None):
    version = rule_create(actor=author, name=name, action=action, mode=mode,
                          conditions=conditions or [{"field": "amount", "op": "gte", "value": 500}])
    return rule_version_approve(actor=approver, version=version)


def decide(client, body: dict, *, capture=None, key: str | None = None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    if capture is None:
        return client.post("/api/transactions/decide", body, format="json", **headers)
    with capture(execute=True):  # the commit's callbacks: the worker's full evaluation (eager)
        return client.post("/api/transactions/decide", body, format="json", **headers)


class StepClock:
    """A monotonic clock that advances one second each time it is read: the engine reads it
    once before each rule, so the budget is counted in rules, never in machine time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        value = self.now
        self.now += 1.0
        return value


@pytest.fixture(autouse=True)
def counted_clock(settings, monkeypatch):
    """The budget counted in rules, never in machine time: a step clock, and a budget of a
    thousand steps (the budget's own test sets three)."""
    settings.TXN_DECISION_BUDGET_MS = 1_000_000
    monkeypatch.setattr(DecideApi, "clock", staticmethod(StepClock()))


def test_a_deny_listed_device_is_blocked_at_once_and_removing_it_lets_the_next_one_through(
        alice, mona, django_capture_on_commit_callbacks):
    running(alice, mona, name="Big purchase")  # amount >= 500: none of these
    api = client_for(alice)
    made = api.post("/api/transaction-lists/", {"name": "deny-devices", "kind": "deny", "field": "device"},
                    format="json")
    assert made.status_code == 201, made.json()
    added = api.post("/api/transaction-lists/deny-devices/entries/", {"value": "dev-bad", "note": "ring device"},
                     format="json")
    assert added.status_code == 201 and added.json()["active"] is True

    blocked = decide(api, txn(1, device="dev-bad"), capture=django_capture_on_commit_callbacks)
    assert blocked.status_code == 201, blocked.json()
    body = blocked.json()
    assert body["outcome"] == "block" and body["score"] == 100 and body["timed_out"] is False
    assert body["rules_evaluated"] == 0  # at once: no rule ran for the answer
    assert body["hits"] == [{"list": "deny-devices", "kind": "deny", "field": "device", "value": "dev-bad",
                             "reason": "device dev-bad is on the deny list deny-devices"}]
    # The async path: the card's case opens for a person; a list entry alone requests no card block.
    case = Case.objects.get(case_type="transaction_investigation")
    assert not Action.objects.exists()
    decision = Decision.objects.get(decision_id=body["decision_id"])
    assert decision.evaluated_outcome == "block" and decision.evaluated_at is not None
    assert decision.latency_us > 0 and decision.transaction.transaction_id == "TX-CARD-1-1"
    entry = AuditEntry.objects.filter(action="txn.rule_hits", case_id=case.pk).get()
    assert entry.data["listed"][0]["value"] == "dev-bad" and entry.data["opened"] is True

    removed = api.post("/api/transaction-lists/deny-devices/entries/remove/", {"value": "dev-bad"}, format="json")
    assert removed.status_code == 204
    again = decide(api, txn(2, device="dev-bad"), capture=django_capture_on_commit_callbacks)
    assert again.json()["outcome"] == "allow" and again.json()["hits"] == []
    assert again.json()["rules_evaluated"] == 1
    assert api.post("/api/transaction-lists/deny-devices/entries/remove/", {"value": "dev-bad"},
                    format="json").status_code == 409
    # Both changes audited, by whom, with the value.
    changes = list(AuditEntry.objects.filter(action__startswith="txn.list_entry").order_by("pk")
                   .values_list("action", "actor", "data__value"))
    assert changes == [("txn.list_entry_added", "alice", "dev-bad"), ("txn.list_entry_removed", "alice", "dev-bad")]
    assert AuditEntry.objects.filter(action="txn.decided").count() == 2


def test_an_expired_entry_does_not_match_and_an_allow_list_waives_review_but_not_block(alice, mona):
    from casework.transactions.lists.models import ListEntry
    from casework.transactions.lists.services import list_entry_add, value_list_create

    running(alice, mona, name="Big purchase")  # review at >= 500
    running(alice, mona, name="Huge purchase", action="block", conditions=[{"field": "amount", "op": "gte",
                                                                            "value": 5000}])
    deny = value_list_create(actor=alice, name="deny-cards", kind="deny", field="card")
    trusted = value_list_create(actor=alice, name="trusted-cards", kind="allow", field="card")
    list_entry_add(actor=alice, value_list=deny, value="CARD-9", expires_at=datetime.now(UTC) + timedelta(days=1))
    ListEntry.objects.filter(value="CARD-9").update(expires_at=datetime.now(UTC) - timedelta(seconds=1))
    list_entry_add(actor=alice, value_list=trusted, value="CARD-7")
    api = client_for(alice)
    assert decide(api, txn(1, card="CARD-9")).json()["outcome"] == "allow"  # expired: no match
    waived = decide(api, txn(1, card="CARD-7", amount="900.00")).json()
    assert waived["outcome"] == "allow" and [h.get("list") for h in waived["hits"]] == ["trusted-cards"]
    assert waived["rules_evaluated"] == 1  # the block rule ran; the review rule could not change the outcome
    huge = decide(api, txn(2, card="CARD-7", amount="9000.00")).json()
    assert huge["outcome"] == "block" and {h.get("rule") for h in huge["hits"]} == {None, "Huge purchase"}
    review = decide(api, txn(1, card="CARD-8", amount="900.00")).json()
    assert review["outcome"] == "review" and review["hits"][0]["rule"] == "Big purchase"
    assert review["hits"][0]["reason"] == "amount = 900.0 ≥ 500" and review["score"] == 50  # rules.explain


def test_a_rule_tests_list_membership(alice, mona, django_capture_on_commit_callbacks):
    from casework.transactions.lists.services import list_entry_add, value_list_create

    watched = value_list_create(actor=alice, name="watch-ips", kind="deny", field="ip")
    bad = client_for(alice).post("/api/transactions/rules/", {
        "name": "x", "action": "review", "mode": "live", "conditions": [{"in_list": "nope", "field": "ip"}]},
        format="json")
    assert bad.status_code == 400 and "no list named 'nope'" in str(bad.json()["conditions"])
    wrong = client_for(alice).post("/api/transactions/rules/", {
        "name": "x", "action": "review", "mode": "live", "conditions": [{"in_list": "watch-ips", "field": "device"}]},
        format="json")
    assert wrong.status_code == 400 and "holds ip values" in str(wrong.json()["conditions"])
    # A review rule over an allow list of merchants (a list condition with a plain one).
    partners = value_list_create(actor=alice, name="partner-merchants", kind="allow", field="merchant")
    list_entry_add(actor=alice, value_list=partners, value="M-1")
    rule = running(alice, mona, name="Partner big ticket", action="block", conditions=[
        {"in_list": "partner-merchants", "field": "merchant"}, {"field": "amount", "op": "gte", "value": 2000}])
    assert rule.described == "merchant on list partner-merchants and amount ≥ 2000"
    api = client_for(alice)
    small = decide(api, txn(1, merchant_id="M-1", amount="10.00")).json()
    assert small["outcome"] == "allow"  # allow-listed merchant, no block rule hit
    big = decide(api, txn(2, merchant_id="M-1", amount="2500.00"), capture=django_capture_on_commit_callbacks).json()
    assert big["outcome"] == "block" and big["hits"][-1]["rule"] == "Partner big ticket"
    # The worker's evaluation agrees, and the block rule requests the card block.
    assert RuleHit.objects.filter(version=rule).count() == 1 and Action.objects.count() == 1
    list_entry_add(actor=alice, value_list=watched, value="2001:db8::1")
    assert decide(api, txn(3, ip_address="2001:0db8:0000::1")).json()["outcome"] == "block"


def test_past_the_budget_the_fallback_answers_and_the_worker_records_every_hit(
        alice, mona, settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.TXN_DECISION_BUDGET_MS = 3000  # three ticks of the step clock: two rules, then the deadline
    settings.TXN_DECISION_FALLBACK = "allow"
    for name in ("A", "B", "C"):  # block rules come before review rules; none of these hits
        running(alice, mona, name=f"Block {name}", action="block",
                conditions=[{"field": "country", "op": "eq", "value": "KP"}])
    slow = running(alice, mona, name="Small ecommerce", conditions=[{"field": "channel", "op": "eq",
                                                                      "value": "ecommerce"}])
    shadow = running(alice, mona, name="Shadow any", mode="shadow", conditions=[{"field": "mcc", "op": "eq",
                                                                                  "value": "5999"}])
    monkeypatch.setattr(DecideApi, "clock", staticmethod(StepClock()))
    answer = decide(client_for(alice), txn(1), capture=django_capture_on_commit_callbacks)
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["timed_out"] is True and body["outcome"] == "allow" and body["rules_evaluated"] == 2
    assert body["hits"] == []  # the review rule was never reached in the request
    decision = Decision.objects.get(decision_id=body["decision_id"])
    assert decision.timed_out and decision.outcome == "allow"
    # The full evaluation in the worker ran every rule, live and shadow, and recorded its hits.
    assert decision.evaluated_outcome == "review"
    assert {(h["rule"], h["mode"]) for h in decision.evaluated_hits} == {("Small ecommerce", "live"),
                                                                        ("Shadow any", "shadow")}
    assert RuleHit.objects.filter(version=slow, case__isnull=False).count() == 1
    assert RuleHit.objects.filter(version=shadow, case__isnull=True).count() == 1

    # With the review fallback and the same clock, the answer is review.
    settings.TXN_DECISION_FALLBACK = "review"
    monkeypatch.setattr(DecideApi, "clock", staticmethod(StepClock()))
    assert decide(client_for(alice), txn(2)).json()["outcome"] == "review"
    # Shadow rules never run in the request: within the budget, the answer names the live hit only.
    settings.TXN_DECISION_BUDGET_MS = 60_000
    monkeypatch.setattr(DecideApi, "clock", staticmethod(StepClock()))
    within = decide(client_for(alice), txn(3)).json()
    assert within["timed_out"] is False and within["rules_evaluated"] == 4
    assert [h["rule"] for h in within["hits"]] == ["Small ecommerce"] and within["outcome"] == "review"


def test_a_replay_with_the_same_key_returns_the_same_decision(alice):
    api = client_for(alice)
    first = decide(api, txn(1), key="auth-0001")
    again = decide(api, txn(1), key="auth-0001")
    assert first.status_code == again.status_code == 201
    assert again.json()["decision_id"] == first.json()["decision_id"] and again["Idempotent-Replayed"] == "true"
    assert Decision.objects.count() == Transaction.objects.count() == 1
    other = decide(api, txn(2), key="auth-0001")
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    # Without a key the same transaction is a second request: its id is already stored.
    assert decide(api, txn(1)).json() == {"transaction_id": ["TX-CARD-1-1 is already stored."]}


@pytest.mark.parametrize(("change", "field"), [({"amount": "-1"}, "amount"), ({"card_last4": "42"}, "card_last4"),
                                               ({"occurred_at": "2026-11-29T07:00:00"}, "occurred_at"),
                                               ({"channel": "carrier pigeon"}, "channel"),
                                               ({"transactions": []}, "transactions")])
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(alice, change, field):
    response = decide(client_for(alice), {**txn(1), **change})
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Transaction.objects.exists() and not Decision.objects.exists()


def test_only_investigators_decide_and_change_lists(mona, alice):
    assert decide(client_for(mona), txn(1)).status_code == 403
    assert APIClient().post("/api/transactions/decide", txn(1), format="json").status_code == 401
    client_for(alice).post("/api/transaction-lists/", {"name": "deny-bins", "kind": "deny", "field": "bin"},
                           format="json")
    bad = client_for(alice).post("/api/transaction-lists/deny-bins/entries/", {"value": "12"}, format="json")
    assert bad.status_code == 400 and "6 to 8 digits" in bad.json()["value"][0]
    # Managers change lists too; everyone signed in reads them.
    assert client_for(mona).post("/api/transaction-lists/deny-bins/entries/", {"value": "411111"},
                                 format="json").status_code == 201
    listed = client_for(mona).get("/api/transaction-lists/").json()
    assert listed == [{"name": "deny-bins", "kind": "deny", "field": "bin", "description": "", "entries": 1,
                       "created_at": listed[0]["created_at"]}]


@pytest.mark.django_db(transaction=True)
def test_two_authorisations_on_a_new_card_at_once_are_both_decided(alice):
    """Both create the card's account; on PostgreSQL the second insert waits for the first and
    fails on the unique account id, and the decision tries once more (SQLite serialises them)."""
    import threading

    from django.db import connection

    barrier = threading.Barrier(4)
    answers = []

    def send(n: int) -> None:
        try:
            barrier.wait(timeout=30)  # failure guard only: a lost thread fails the test, never hangs it
            answers.append(decide(client_for(alice), txn(n, card="CARD-NEW")))
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(n,), daemon=True) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a request never answered"
    assert sorted(a.status_code for a in answers) == [201] * 4, [a.content for a in answers]
    assert Decision.objects.count() == 4 and Transaction.objects.values("account").distinct().count() == 1


CARD_TESTING = [{"agg": {"fn": "count", "by": "card", "window": "10m"}, "op": "gte", "value": 6},
                {"field": "amount", "op": "lte", "value": 5}]


def test_card_testing_is_blocked_from_the_sixth_small_authorisation_and_the_case_opens_once(
        alice, mona, django_capture_on_commit_callbacks):
    running(alice, mona, name="Card testing", action="block", conditions=CARD_TESTING)
    api = client_for(alice)
    # Twelve 1 EUR authorisations on one card in three minutes (15 s apart).
    outcomes = [decide(api, txn(n), capture=django_capture_on_commit_callbacks).json()["outcome"] for n in range(12)]
    assert outcomes == ["allow"] * 5 + ["block"] * 7
    assert Case.objects.filter(case_type="transaction_investigation").count() == 1
    assert Action.objects.filter(type="transaction.card_block_requested").count() == 1
    assert list(Decision.objects.order_by("pk").values_list("evaluated_outcome", flat=True)) == outcomes


def test_a_decision_is_read_back_by_its_id_as_it_was_answered(alice, mona):
    answered = decide(client_for(alice), txn(1)).json()
    read = client_for(alice).get(f"/api/transactions/decisions/{answered['decision_id']}")
    assert read.status_code == 200 and read.json() == answered
    assert client_for(mona).get(f"/api/transactions/decisions/{answered['decision_id']}").status_code == 403
    assert client_for(alice).get("/api/transactions/decisions/00000000-0000-4000-8000-000000000000").status_code == 404
    assert client_for(alice).get("/api/transactions/decisions/not-a-uuid").status_code == 404


def test_a_decision_is_not_read_by_an_investigator_outside_the_transactions_teams(alice):
    """Need-to-know: a card's transaction and the amounts in the hits' reasons are the transaction
    team's; a support agent is answered as for a decision that does not exist."""
    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create
    from casework.people.teams import team_create, team_member_set

    answered = decide(client_for(alice), txn(1)).json()
    sam = user_create(actor="system", username="sam", password="sam-pass-123", role=INVESTIGATOR)
    team_member_set(actor="system", team=team_create(actor="system", name="Support desk",
                                                     case_types=["support_ticket"]), user=sam)
    assert client_for(sam).get(f"/api/transactions/decisions/{answered['decision_id']}").status_code == 404
    tina = user_create(actor="system", username="tina", password="tina-pass-123", role=INVESTIGATOR)
    team_member_set(actor="system", team=team_create(actor="system", name="Transaction monitoring",
                                                     case_types=["transaction_investigation"]), user=tina)
    assert client_for(tina).get(f"/api/transactions/decisions/{answered['decision_id']}").json() == answered
