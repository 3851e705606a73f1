"""Fraud, what a second look found (issue 13): the agents leave a case awaiting a decision,
and re-assess keeps the similar-case list its specialists were shown."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from casework.fraud import selectors
from casework.fraud.services import alert_create, alert_reassess
from tests.fraud.conftest import CYCLING

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_agents_leave_a_fraud_case_awaiting_a_decision(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    alert.case.refresh_from_db()
    assert alert.case.status == "awaiting_decision"
    assert alert.case.get_status_display() == "Awaiting decision"


def test_reassess_uses_the_cached_similar_cases_and_does_not_recompute_them(alice, monkeypatch):
    alert = alert_create(actor=alice, data=CYCLING)
    first = AgentRun.objects.get(case=alert.case)
    first.state["input_similar_cases"] = [{"reference": "FRA-999999", "account_id": "ACC-X", "distance": 0.5}]
    first.state["input_similar_count"] = 1
    AgentRun.objects.filter(pk=first.pk).update(state=first.state)

    def recomputed(*args, **kwargs):
        raise AssertionError("re-assess recomputed the similar cases")

    monkeypatch.setattr(selectors, "similar_confirmed", recomputed)
    run = alert_reassess(actor=alice, alert=alert)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert run.state["input_similar_cases"] == first.state["input_similar_cases"]
    assert run.state["input_similar_count"] == 1


def test_rerunning_one_specialist_reruns_the_orchestrator_over_all_five_and_the_timeline_says_why(
        alice, alice_client):
    from agents.models import AgentCall
    from agents.services import run_rerun_agent
    from audit.models import AuditEntry
    from casework.cases.services import case_set_priority
    from casework.fraud.services import alert_rerun_all

    alert = alert_create(actor=alice, data=CYCLING)
    good = AgentRun.objects.get(case=alert.case)
    alert_rerun_all(actor=alice, alert=alert)
    broken = AgentRun.objects.filter(case=alert.case).exclude(pk=good.pk).get()
    for key in ("identity", "geo"):  # two specialists failed in the latest run
        broken.state["results"][key] = {**broken.results[key], "output": None, "error": f"{key} timed out",
                                        "error_type": "timeout"}
    AgentRun.objects.filter(pk=broken.pk).update(state=broken.state)
    broken.refresh_from_db()
    case_set_priority(actor=alice, case=alert.case, priority="low", reason="test")

    rerun = run_rerun_agent(actor=alice, run=broken, key="identity")
    rerun.refresh_from_db()
    assert rerun.status == AgentRun.Status.COMPLETED, rerun.error
    assert rerun.results["geo"]["from_run"] == good.pk and rerun.results["geo"]["output"] is not None
    assert not rerun.results["identity"].get("cached")  # the fresh one
    orchestrator = AgentCall.objects.get(run=rerun, key="orchestrator")
    assert set(orchestrator.input) >= {"transaction", "identity", "geo", "network", "outcome_similarity"}
    assert orchestrator.input.get("unavailable_specialists", []) == []
    change = AuditEntry.objects.filter(case_id=alert.case_id, action="case.priority_changed").order_by("-id").first()
    assert change.data["from"] == "low"
    assert f"Run #{rerun.pk} re-ran identity, then the orchestrator over all five specialists" in change.data["reason"]
    page = alice_client.get(f"/cases/{alert.case.reference}/").content.decode()
    assert f"Run #{rerun.pk} re-ran identity" in page


def test_a_lookalike_a_person_dismissed_lowers_the_next_ones_likelihood_and_the_page_names_it(
        alice, alice_client):
    from casework.cases.services import case_close

    first = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-7001"})
    before = AgentRun.objects.get(case=first.case).results["outcome_similarity"]["output"]["fraud_likelihood"]
    case_close(actor=alice, case=first.case, outcome="false_positive",
               reason="Payroll agent account: fast in-and-out is its job.")

    second = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-7002"})
    run = AgentRun.objects.filter(case=second.case, mode="alert_creation").get()
    output = run.results["outcome_similarity"]["output"]
    assert output["fraud_likelihood"] < before
    assert f"{first.case.reference} (dismissed as false positive by alice)" in output["explanation"]
    assert run.state["input_similar_cleared"][0]["reference"] == first.case.reference
    page = alice_client.get(f"/cases/{second.case.reference}/").content.decode()
    assert 'id="fraud-similar-cleared"' in page and "Payroll agent account" in page


def test_known_fraud_links_count_linked_accounts_confirmed_as_fraud(alice, alice_client):
    from casework.cases.services import case_close

    ring = {**CYCLING, "device_ids": ["DEV-1", "DEV-2"], "ip_addresses": ["198.51.100.7"]}
    first = alert_create(actor=alice, data={**ring, "account_id": "ACC-R1"})
    second = alert_create(actor=alice, data={**ring, "account_id": "ACC-R2", "device_ids": ["DEV-2"]})
    alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-ALONE", "device_ids": ["DEV-9"]})
    for alert in (first, second):
        case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Mule ring.")

    third = alert_create(actor=alice, data={**ring, "account_id": "ACC-R3", "device_ids": ["DEV-1"],
                                           "ip_addresses": ["198.51.100.7"]})
    run = AgentRun.objects.get(case=third.case, mode="alert_creation")
    network_call = run.calls.get(key="network")
    assert network_call.input["known_fraud_links_from_system"] == 2
    network = run.results["network"]["output"]
    assert network["known_fraud_links"] == 2
    assert "Network: 2 linked accounts already confirmed as fraud" in run.results["orchestrator"]["output"][
        "key_drivers"]
    html = alice_client.get(f"/cases/{third.case.reference}/").content.decode()
    assert 'id="fraud-known-links"' in html
    assert f"{first.case.reference}</a> (ACC-R1): shares IP 198.51.100.7, device DEV-1" in html
