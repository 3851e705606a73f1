"""One open case per card, held by the database: two evaluations of two batches racing on a
new card (each with a live hit) open one case, and the loser's hit joins it.

Monitoring evaluates batches in parallel; each looked for the card's open case among the
hits already committed, so two batches posted one after the other each opened a case (6 to 8
cards in 10 over four runs). The two evaluations here run on two connections and meet at a
barrier once each has locked its batch and read the rules, before either decides the card:
both then look for the card's case while neither has committed. SQLite takes its write lock
at BEGIN (IMMEDIATE), so there the two never overlap: the race runs on PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from casework.cases.models import Case
from casework.transactions.ingest import transactions_import
from casework.transactions.monitoring import evaluate
from casework.transactions.monitoring.models import RuleHit
from tests.transactions.test_monitoring import WHEN, running, txn

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql",
                       reason="two evaluations racing need PostgreSQL (SQLite runs one writer at a time); "
                              "make test uses PostgreSQL"),
]


@pytest.fixture
def no_workers(monkeypatch):
    """The evaluations and investigations run where the test says, not as the commit's tasks."""
    from agents import tasks as agent_tasks
    from casework.transactions.monitoring import tasks as monitoring_tasks

    monkeypatch.setattr(monitoring_tasks.monitoring_evaluate, "delay", lambda *args, **kwargs: None)
    monkeypatch.setattr(agent_tasks.run_pipeline, "delay", lambda *args, **kwargs: None)


def race(batches: list[list[int]], monkeypatch) -> list[Exception]:
    """Evaluate each batch on its own thread (its own connection), all of them past the rules'
    read before any decides a card."""
    barrier = threading.Barrier(len(batches))
    read_rules = evaluate.active_versions

    def rules_then_wait():
        found = read_rules()
        barrier.wait(timeout=30)  # a guard only: a lost thread fails the test, never hangs it
        return found

    monkeypatch.setattr(evaluate, "active_versions", rules_then_wait)
    errors: list[Exception] = []

    def run(ids):
        try:
            evaluate.transactions_evaluate(ids, now=WHEN)
        except Exception as exc:  # noqa: BLE001 - the test reports what the thread got
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(ids,), daemon=True) for ids in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "an evaluation never ended (a lock held for ever?)"
    return errors


def test_two_batches_racing_on_a_new_card_open_one_case_and_the_second_joins_it(alice, mona, no_workers,
                                                                               monkeypatch):
    live = running(alice, mona, name="Big electronics")
    first = transactions_import(actor="system", rows=[txn(1)])
    second = transactions_import(actor="system", rows=[txn(2)])

    errors = race([[first[0].pk], [second[0].pk]], monkeypatch)

    assert not errors, errors
    cases = list(Case.objects.filter(case_type="transaction_investigation"))
    assert len(cases) == 1, f"{len(cases)} cases opened for one card"
    hits = RuleHit.objects.filter(version=live)
    assert hits.count() == 2 and {h.case_id for h in hits} == {cases[0].pk}
    assert hits.filter(opened_case=True).count() == 1


def test_racing_batches_over_several_cards_in_opposite_orders_open_one_case_each(alice, mona, no_workers,
                                                                               monkeypatch):
    """Each batch holds hits on the same three cards: the claims are taken in one order (no
    deadlock), and every card ends with one case holding all of its hits."""
    running(alice, mona, name="Big electronics")
    cards = ["CARD-A", "CARD-B", "CARD-C"]
    one = transactions_import(actor="system", rows=[txn(1, card=c) for c in cards])
    other = transactions_import(actor="system", rows=[txn(2, card=c) for c in reversed(cards)])

    errors = race([[t.pk for t in one], [t.pk for t in other]], monkeypatch)

    assert not errors, errors
    assert Case.objects.filter(case_type="transaction_investigation").count() == 3
    for card in cards:
        hits = RuleHit.objects.filter(transaction__account__account_id=card)
        assert hits.count() == 2 and len({h.case_id for h in hits}) == 1, card
