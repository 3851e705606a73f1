"""Two people closing the same case at the same moment: exactly one decision, the other
gets a Conflict (409 over the API). Real threads, real transactions, real database:
SQLite serialises on its IMMEDIATE write lock, PostgreSQL on select_for_update."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from audit.services import audit_verify_chain
from casework.cases.models import Case, Decision
from casework.cases.services import case_close, case_create
from casework.errors import Conflict

pytestmark = pytest.mark.django_db(transaction=True)


def race(*workers):
    """Run each worker on its own thread, released together; return their results or exceptions."""
    barrier = threading.Barrier(len(workers))
    results: list = [None] * len(workers)

    def run(i, work):
        try:
            barrier.wait(timeout=10)
            results[i] = work()
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a closing thread hung"
    return results


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Deposit cycling")


def test_two_simultaneous_closes_make_exactly_one_decision(case, alice, ivan):
    def close_as(user, outcome):
        # Each thread starts from its own stale copy, as two browser tabs would.
        return lambda: case_close(actor=user, case=Case.objects.get(pk=case.pk), outcome=outcome,
                                  reason=f"{user.username} decides")

    results = race(close_as(alice, "legit"), close_as(ivan, "confirmed_fraud"))

    decisions = [r for r in results if isinstance(r, Decision)]
    conflicts = [r for r in results if isinstance(r, Conflict)]
    assert len(decisions) == 1 and len(conflicts) == 1, results
    winner = decisions[0].decided_by.username
    assert f"already closed by {winner}" in conflicts[0].message
    assert Decision.objects.filter(case=case).count() == 1
    case.refresh_from_db()
    assert case.is_closed
    checked, broken, _ = audit_verify_chain()
    assert broken is None and checked >= 3


def test_the_loser_of_a_close_race_over_the_api_gets_409(case, alice, ivan):
    def post_as(user, outcome):
        def work():
            client = APIClient()
            client.force_authenticate(user)
            return client.post(f"/api/cases/{case.reference}/close/",
                               {"outcome": outcome, "reason": "race"}, format="json")
        return work

    responses = race(post_as(alice, "legit"), post_as(ivan, "false_positive"))

    assert sorted(r.status_code for r in responses) == [201, 409], responses
    loser = next(r for r in responses if r.status_code == 409)
    winner = next(r for r in responses if r.status_code == 201)
    assert f"already closed by {winner.json()['decided_by']}" in loser.json()["detail"]
    assert Decision.objects.filter(case=case).count() == 1


def test_many_simultaneous_closes_still_make_one_decision(case, alice, ivan):
    users = [alice, ivan] * 3
    results = race(*[
        (lambda u=u: case_close(actor=u, case=Case.objects.get(pk=case.pk), outcome="legit", reason="r"))
        for u in users
    ])
    assert sum(isinstance(r, Decision) for r in results) == 1, results
    assert sum(isinstance(r, Conflict) for r in results) == len(users) - 1, results
    assert Decision.objects.filter(case=case).count() == 1
