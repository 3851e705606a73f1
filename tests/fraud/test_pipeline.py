"""The fraud pipeline end to end on the offline provider: call counts, cache, re-assess, close."""

from __future__ import annotations

import pytest

from agents.models import AgentCall, AgentRun
from audit.models import AuditEntry
from casework.cases.services import case_close
from casework.errors import Conflict
from casework.fraud.models import KnowledgePattern
from casework.fraud.services import PRIORITY_FOR_RISK, alert_create, alert_reassess, alert_rerun_all
from tests.fraud.conftest import CLEAN, CYCLING

pytestmark = pytest.mark.django_db(transaction=True)

SPECIALISTS = {"transaction", "identity", "geo", "network", "outcome_similarity"}


def llm_calls(case, mode=None) -> int:
    calls = AgentCall.objects.filter(run__case=case, kind=AgentCall.Kind.AGENT)
    if mode:
        calls = calls.filter(run__mode=mode)
    return calls.count()


def test_creating_an_alert_runs_six_agents_and_sets_the_priority(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    run = AgentRun.objects.get(case=alert.case)
    assert run.status == AgentRun.Status.COMPLETED
    assert set(run.results) == SPECIALISTS | {"orchestrator"}
    assert llm_calls(alert.case) == 6
    orchestrator = run.results["orchestrator"]["output"]
    assert orchestrator["risk_level"] in ("high", "critical")
    alert.case.refresh_from_db()
    # The orchestrator's priority, never below the alert's own score's (issue 22's guard).
    rank = ["low", "medium", "high", "critical"]
    floor = PRIORITY_FOR_RISK[alert.risk_level]
    assert alert.case.priority == max(orchestrator["priority"], floor, key=rank.index)
    alert.refresh_from_db()
    assert alert.status == "assessed" and alert.case.status == "awaiting_decision"
    # Every agent call is audited under the agent's name.
    actors = set(AuditEntry.objects.filter(case_id=alert.case_id, action="agent.call_completed")
                 .values_list("actor", flat=True))
    assert actors == {f"agent:{a}" for a in SPECIALISTS | {"orchestrator"}}


def test_a_clean_account_comes_out_low(alice):
    alert = alert_create(actor=alice, data=CLEAN)
    run = AgentRun.objects.get(case=alert.case)
    assert run.results["orchestrator"]["output"]["risk_level"] in ("low", "medium")


def test_reopening_a_case_calls_no_llm(alice_client, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    before = AgentCall.objects.count()
    assert alice_client.get(f"/cases/{alert.case.reference}/").status_code == 200
    assert alice_client.get(f"/cases/{alert.case.reference}/runs/").status_code == 200
    assert AgentCall.objects.count() == before


def test_reassessing_runs_only_the_orchestrator_over_the_cached_specialists(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    first = AgentRun.objects.get(case=alert.case)
    run = alert_reassess(actor=alice, alert=alert)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED
    assert llm_calls(alert.case, "case_open") == 1
    assert run.calls.get().name == "orchestrator"
    assert run.state["input_cached_from_run"] == first.pk
    assert all(run.results[k]["cached"] for k in SPECIALISTS)
    assert AgentRun.objects.filter(case=alert.case).count() == 2  # every run is kept


def test_rerunning_all_calls_every_agent_again(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    alert_rerun_all(actor=alice, alert=alert)
    assert llm_calls(alert.case) == 12


def test_closing_runs_knowledge_capture_once_and_attaches_the_pattern(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    decision = case_close(actor=alice, case=alert.case, outcome="confirmed_fraud",
                          reason="Deposits leave within two days of arriving; income does not explain them.")
    assert llm_calls(alert.case, "close") == 1
    pattern = KnowledgePattern.objects.get(case=alert.case)
    assert pattern.key_signals and pattern.behavioral_pattern and pattern.one_sentence_description
    decision.refresh_from_db()
    assert decision.data["knowledge_pattern"]["final_outcome"]


def test_a_second_reassess_while_one_runs_is_refused(alice):
    from django.db import transaction

    alert = alert_create(actor=alice, data=CYCLING)
    with transaction.atomic():  # the first run is queued, its task not yet started
        alert_reassess(actor=alice, alert=alert)
        with pytest.raises(Conflict):
            alert_reassess(actor=alice, alert=alert)


def test_a_closed_case_cannot_be_reassessed_or_rerun(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    case_close(actor=alice, case=alert.case, outcome="legit", reason="Known payroll pattern.")
    alert.case.refresh_from_db()
    for service in (alert_reassess, alert_rerun_all):
        with pytest.raises(Conflict, match="closed"):
            service(actor=alice, alert=alert)


def test_the_captured_sentence_reads_as_one_sentence(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud",
               reason="Deposits leave within two days of arriving and income does not explain them. " * 5)
    sentence = KnowledgePattern.objects.get(case=alert.case).one_sentence_description
    assert sentence.startswith("Confirmed Fraud on ACC-1043: ")
    assert len(sentence) <= 500 and " wit;" not in sentence
