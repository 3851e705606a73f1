"""Two investigators close the same fraud case at the same moment: one decision, one
knowledge capture, and the other is told the case was already closed."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from agents.models import AgentCall, AgentRun
from audit.models import AuditEntry
from audit.services import audit_verify_chain
from casework.cases.models import Decision
from casework.cases.services import case_close
from casework.errors import Conflict
from casework.fraud.models import KnowledgePattern
from casework.fraud.services import alert_create
from tests.fraud.conftest import CYCLING

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_simultaneous_closes_make_one_decision_and_one_knowledge_capture(alice, ivan):
    alert = alert_create(actor=alice, data=CYCLING)
    case = alert.case
    barrier = threading.Barrier(2, timeout=10)
    outcomes: dict[str, object] = {}

    def close(actor, outcome):
        try:
            barrier.wait()
            outcomes[actor.username] = case_close(actor=actor, case=case, outcome=outcome,
                                                  reason=f"{actor.username} checked the statements.")
        except Conflict as exc:
            outcomes[actor.username] = exc
        except Exception as exc:  # noqa: BLE001 - reported by the assertions below
            outcomes[actor.username] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=close, args=(alice, "confirmed_fraud")),
               threading.Thread(target=close, args=(ivan, "false_positive"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)

    decisions = [o for o in outcomes.values() if isinstance(o, Decision)]
    refused = [o for o in outcomes.values() if isinstance(o, Conflict)]
    assert len(decisions) == 1 and len(refused) == 1, outcomes
    assert refused[0].code == "already_closed"

    assert Decision.objects.filter(case=case).count() == 1
    winner = Decision.objects.get(case=case)
    case.refresh_from_db()
    assert case.is_closed
    assert AuditEntry.objects.filter(case_id=case.pk, action="case.closed").count() == 1

    captures = AgentRun.objects.filter(case=case, mode="close")
    assert captures.count() == 1
    run = captures.get()
    assert run.status == AgentRun.Status.COMPLETED
    assert run.state["input_decision"] == winner.pk
    assert AgentCall.objects.filter(run=run).values_list("name", flat=True).get() == "knowledge_capture"
    pattern = KnowledgePattern.objects.get(case=case)
    assert pattern.decision_id == winner.pk
    checked, broken, why = audit_verify_chain()
    assert broken is None, why
