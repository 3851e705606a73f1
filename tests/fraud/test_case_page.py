"""The fraud case page: the risk block, copilot summary and predictive line on the overview,
the specialists side by side, the evidence tabs, warnings for failed agents, live polling,
re-assess / re-run and the three-outcome close with its captured pattern.

Tests that need a run to really complete are transactional (Celery is eager; the task
starts on commit). The others leave the creation run queued, and fill in or execute its
state by hand, which is quicker and lets them stage any moment of a run.
"""

from __future__ import annotations

import re

import pytest

from agents.llm.offline_registry import OFFLINE_ANALYSTS
from agents.models import AgentRun
from agents.runtime.pipeline import execute_run
from agents.tasks import pipeline_enqueue
from casework.cases.models import Case
from casework.cases.services import case_close, case_create
from casework.fraud.models import KnowledgePattern
from casework.fraud.services import alert_create
from tests.fraud.conftest import CLEAN, CYCLING

committed = pytest.mark.django_db(transaction=True)
SPECIALISTS = ("transaction", "identity", "geo", "network", "outcome_similarity")
RATE_LIMIT = "Rate limit reached. Please try again in a minute."


def page(client, case) -> str:
    response = client.get(f"/cases/{case.reference}/")
    assert response.status_code == 200
    return response.content.decode()


def part(html: str, element_id: str) -> str:
    """The outer markup of the element with this id."""
    found = re.search(rf'<(\w+)[^>]*\bid="{element_id}"', html)
    assert found, f"no element with id {element_id}"
    tag, start, depth = found.group(1), found.start(), 0
    for mark in re.finditer(rf"<(/?){tag}\b[^>]*>", html[start:]):
        depth += -1 if mark.group(1) else 1
        if depth == 0:
            return html[start:start + mark.end()]
    raise AssertionError(f"element {element_id} is not closed")


def esc(value) -> str:
    """As Django's autoescape writes it."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        "'", "&#x27;").replace('"', "&quot;")


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def latest_run(alert) -> AgentRun:
    return AgentRun.objects.filter(case=alert.case, mode__in=("alert_creation", "case_open")).first()


def set_result(run: AgentRun, key: str, *, output=None, error="", error_type="", stage=0) -> None:
    run.state.setdefault("results", {})[key] = {
        "agent": key, "stage": stage, "output": output, "error": error, "error_type": error_type,
        "latency_ms": 12, "attempts": 1, "input_tokens": 0, "output_tokens": 0,
    }
    run.save(update_fields=["state"])


def finish(run: AgentRun, status=AgentRun.Status.COMPLETED, provider="offline") -> None:
    run.status = status
    run.provider = provider
    run.save(update_fields=["status", "provider"])


@pytest.fixture
def queued(alice):
    """A CYCLING alert whose creation run is queued (the test's transaction never commits)."""
    return alert_create(actor=alice, data=CYCLING)


# --- the overview ------------------------------------------------------------------------

@committed
def test_the_overview_leads_with_the_orchestrators_risk_block(alice_client, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    run = latest_run(alert)
    assert run.status == AgentRun.Status.COMPLETED
    orchestrator = run.results["orchestrator"]["output"]
    html = page(alice_client, alert.case)
    overview = html[html.index('id="tab-overview"'):html.index('id="tab-fraud-transactions"')]
    block = part(overview, "fraud-risk")
    risk = text(block)
    assert "Why this account was flagged" in risk
    assert f"{orchestrator['risk_level'].capitalize()} risk" in risk
    assert f"Confidence {orchestrator['confidence'] * 100:.0f}%" in risk
    assert f"Priority {orchestrator['priority'].capitalize()}" in risk
    assert "Key drivers" in risk
    for driver in orchestrator["key_drivers"]:
        assert f"<li>{esc(driver)}</li>" in block
    # The copilot: the start of the orchestrator's summary, cut to a 30-second read.
    copilot = part(overview, "fraud-copilot")
    assert "30-second summary" in copilot
    assert esc(orchestrator["investigation_summary"][:60]) in copilot
    assert "…" in copilot and len(text(copilot)) < len(orchestrator["investigation_summary"])
    # The results came from the offline analysts, and the page says so.
    assert "Offline rule-based analyst" in overview
    assert "rule-based risk factors" not in risk


@committed
def test_the_predictive_line_uses_outcome_similarity(alice_client, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    similarity = latest_run(alert).results["outcome_similarity"]["output"]
    line = text(part(page(alice_client, alert.case), "fraud-predictive"))
    assert f"{similarity['fraud_likelihood'] * 100:.0f}% likelihood of fraud" in line
    assert f"{similarity['similar_confirmed_cases_count']} similar confirmed fraud cases" in line
    assert similarity["explanation"][:40] in line


@committed
def test_a_failed_orchestrator_falls_back_to_the_rule_based_risk_factors(alice_client, alice, monkeypatch):
    monkeypatch.setitem(OFFLINE_ANALYSTS, "orchestrator", lambda data: {"risk_level": "banana"})
    alert = alert_create(actor=alice, data=CYCLING)
    result = latest_run(alert).results["orchestrator"]
    assert result["error"] and result["output"] is None
    html = page(alice_client, alert.case)
    assert "Orchestrator unavailable:" in html
    risk = text(part(html, "fraud-risk"))
    assert "The orchestrator failed" in risk
    assert "showing the rule-based risk factors and fraud probability from the casework scorer instead" in risk
    assert "Rule-based risk factors" in risk
    assert f"Fraud probability {alert.fraud_probability * 100:.0f}%" in risk
    assert f"{alert.risk_level.capitalize()} risk" in risk
    for factor in alert.risk_factors:
        assert factor[:50] in risk
    assert "Key drivers" not in risk and "Confidence" not in risk
    # The specialists still answered and are shown.
    assert "Transaction agent unavailable" not in html
    assert "Unavailable" not in part(html, "fraud-specialists")


def test_an_orchestrator_that_has_not_answered_yet_shows_the_rule_based_scores(alice_client, queued):
    risk = text(part(page(alice_client, queued.case), "fraud-risk"))
    assert "The orchestrator has not answered yet" in risk
    assert "Rule-based risk factors" in risk


@committed
def test_a_failed_specialist_is_named_and_the_others_carry_on(alice_client, alice, monkeypatch):
    monkeypatch.setitem(OFFLINE_ANALYSTS, "transaction", lambda data: {"anomaly_score": 7})
    alert = alert_create(actor=alice, data=CYCLING)
    run = latest_run(alert)
    assert run.results["transaction"]["error"]
    html = page(alice_client, alert.case)
    warning = esc(f"Transaction agent unavailable: {run.results['transaction']['error']}")
    assert warning in part(html, "fraud-assessment")
    assert warning in part(html, "fraud-evidence-transaction")
    assert "Unavailable" in part(html, "fraud-specialists")
    # The other specialists and the orchestrator answered.
    assert "Identity risk" in part(html, "fraud-evidence-identity")
    assert "Why this account was flagged" in html and "Key drivers" in part(html, "fraud-risk")


def test_a_rate_limited_agent_says_so_in_plain_words(alice_client, queued):
    run = latest_run(queued)
    set_result(run, "geo", error="Error code: 429 - {'error': 'quota exceeded for rpm'}", error_type="rate_limit")
    finish(run)
    html = page(alice_client, queued.case)
    assert f"Geo agent unavailable: {RATE_LIMIT}" in part(html, "fraud-assessment")
    assert f"Geo agent unavailable: {RATE_LIMIT}" in part(html, "fraud-evidence-geo")
    assert "quota exceeded" not in html


# --- specialists side by side -------------------------------------------------------------

@committed
def test_the_specialists_side_by_side_show_where_they_disagree(alice_client, alice):
    alert = alert_create(actor=alice, data=CYCLING)  # money says fraud; identity, geo, network do not
    rows = part(page(alice_client, alert.case), "fraud-specialists")
    assert "The specialists disagree." in rows
    assert re.search(r'<tr class="fraud-split fraud-split-high">\s*<th scope="row">Transaction</th>', rows)
    assert re.search(r'<tr class="fraud-split fraud-split-low">\s*<th scope="row">Identity</th>', rows)
    assert "anomaly 0.98" in rows  # graded rules (issue 13): 0.90 with the step rules
    for name in ("Transaction", "Identity", "Access &amp; Geo", "Network", "Similar cases"):
        assert f'<th scope="row">{name}</th>' in rows


@committed
def test_specialists_that_agree_raise_no_disagreement(alice_client, alice):
    alert = alert_create(actor=alice, data=CLEAN)
    rows = part(page(alice_client, alert.case), "fraud-specialists")
    assert "disagree" not in rows
    assert rows.count("badge-priority-low") == 5


# --- evidence tabs ----------------------------------------------------------------------

@committed
def test_each_evidence_tab_shows_its_agents_fields_and_raw_features(alice_client, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    results = {key: latest_run(alert).results[key]["output"] for key in SPECIALISTS}
    html = page(alice_client, alert.case)
    for tab_id, label in (("fraud-transactions", "Transactions"), ("fraud-geo", "Access &amp; Geo"),
                          ("fraud-identity", "Identity"), ("fraud-network", "Network"),
                          ("fraud-similar", "Similar Cases")):
        assert f'aria-controls="tab-{tab_id}" id="tab-btn-{tab_id}">{label}</button>' in html

    tx = part(html, "fraud-evidence-transaction")
    assert "Anomaly score" in tx and f"{results['transaction']['anomaly_score']:.2f}" in tx
    for pattern in results["transaction"]["detected_patterns"]:
        assert f"<li>{esc(pattern)}</li>" in tx
    assert esc(results["transaction"]["short_explanation"]) in tx
    for feature in ("declared_income_annual", "deposits_total", "deposit_withdraw_cycle_days_avg",
                    "deposits_vs_income_ratio"):
        assert f"<code>{feature}</code>" in tx
    assert "kyc_face_match_score" not in tx

    geo = part(html, "fraud-evidence-geo")
    assert "Geo risk" in geo and f">{results['geo']['geo_risk'].capitalize()}</span>" in geo
    assert all(f"<li>{esc(i)}</li>" in geo for i in results["geo"]["indicators"])
    assert esc(results["geo"]["explanation"]) in geo
    assert "<code>vpn_usage_pct</code>" in geo and "<code>countries_accessed_count</code>" in geo

    identity = part(html, "fraud-evidence-identity")
    assert "Identity risk" in identity and esc(results["identity"]["explanation"]) in identity
    assert all(f"<li>{esc(i)}</li>" in identity for i in results["identity"]["indicators"])
    assert "<code>kyc_face_match_score</code>" in identity and "<code>account_age_days</code>" in identity

    network = part(html, "fraud-evidence-network")
    assert "Cluster size" in network and "Known fraud links" in network
    assert f"<strong>{results['network']['cluster_size']}</strong>" in network
    assert all(f"<li>{esc(s)}</li>" in network for s in results["network"]["shared_signals"])
    assert "<code>device_shared_count</code>" in network and "<code>ip_shared_count</code>" in network

    similar = part(html, "fraud-evidence-similar")
    assert "Fraud likelihood" in similar and "Similar confirmed cases" in similar
    assert esc(results["outcome_similarity"]["explanation"]) in similar
    assert "No past case confirmed as fraud resembles this account." in similar


@committed
def test_similar_cases_link_to_the_confirmed_cases_and_their_patterns(alice_client, alice):
    earlier = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-1", "deposits_total": 150_000.0})
    case_close(actor=alice, case=earlier.case, outcome="confirmed_fraud", reason="Cycling, confirmed by the bank.")
    pattern = KnowledgePattern.objects.get(case=earlier.case)
    alert = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-2"})
    similar = part(page(alice_client, alert.case), "fraud-evidence-similar")
    assert f'<a href="/cases/{earlier.case.reference}/">{earlier.case.reference}</a>' in similar
    assert '<td class="fraud-nowrap">ACC-1</td>' in similar
    assert f"<strong>{esc(pattern.behavioral_pattern)}</strong>" in similar
    assert esc(pattern.one_sentence_description[:40]) in similar
    assert "<strong>1</strong>" in similar  # the agent's count of similar confirmed cases
    line = text(part(page(alice_client, alert.case), "fraud-predictive"))
    assert "1 similar confirmed fraud case " in line + " "


def test_a_case_without_an_alert_keeps_the_plain_case_page(alice_client, alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Made by hand", description="Phone tip-off.")
    html = page(alice_client, case)
    assert "Phone tip-off." in html
    assert "Close case" in html and "Why this account was flagged" not in html
    assert "This case has no fraud alert." in part(html, "fraud-evidence-transaction")


# --- following a run live -----------------------------------------------------------------

def test_the_block_polls_while_the_run_is_queued(alice_client, queued):
    html = page(alice_client, queued.case)
    block = part(html, "fraud-assessment")
    assert f'hx-get="/fraud/cases/{queued.case.reference}/assessment/" hx-trigger="every 2s"' in block
    assert "The agents are working" in block
    assert "Working…" in part(html, "fraud-evidence-transaction")
    assert "Re-assess" not in block and "Re-run all" not in block


def test_results_appear_as_they_land_and_polling_stops_when_the_run_ends(alice_client, queued):
    run = latest_run(queued)
    url = f"/fraud/cases/{queued.case.reference}/assessment/"
    run.status = AgentRun.Status.RUNNING
    run.save(update_fields=["status"])
    set_result(run, "transaction", output={"anomaly_score": 0.88, "detected_patterns": ["fast cycling: 1.3 days"],
                                           "short_explanation": "Money leaves as fast as it arrives."})
    fragment = alice_client.get(url).content.decode()
    assert 'hx-trigger="every 2s"' in fragment
    assert "fast cycling: 1.3 days" in part(fragment, "fraud-specialists")
    assert "Working…" in part(fragment, "fraud-specialists")  # the others are still out
    # The evidence tabs come along out of band.
    assert '<div id="fraud-evidence-transaction" class="fraud-evidence" hx-swap-oob="true">' in fragment
    assert "Money leaves as fast as it arrives." in part(fragment, "fraud-evidence-transaction")

    # The worker finishes the run.
    run.status = AgentRun.Status.QUEUED
    run.state = {}
    run.save(update_fields=["status", "state"])
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED
    fragment = alice_client.get(url).content.decode()
    assert "hx-trigger" not in fragment
    assert "Working…" not in fragment and "The agents are working" not in fragment
    assert "Key drivers" in part(fragment, "fraud-risk")
    html = page(alice_client, queued.case)
    assert "hx-trigger=\"every 2s\"" not in part(html, "fraud-assessment")


def test_the_assessment_fragment_is_for_investigators_only(client, mona, queued):
    client.force_login(mona)
    assert client.get(f"/fraud/cases/{queued.case.reference}/assessment/").status_code == 403


# --- re-assess and re-run -----------------------------------------------------------------

@committed
def test_the_buttons_reassess_and_rerun_all(alice_client, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    block = part(page(alice_client, alert.case), "fraud-assessment")
    assert f'action="/fraud/cases/{alert.case.reference}/reassess/"' in block and ">Re-assess</button>" in block
    assert f'action="/fraud/cases/{alert.case.reference}/rerun/"' in block and ">Re-run all</button>" in block

    response = alice_client.post(f"/fraud/cases/{alert.case.reference}/reassess/")
    assert response.status_code == 302 and response.url == f"/cases/{alert.case.reference}/"
    run = latest_run(alert)
    assert run.mode == "case_open" and run.status == AgentRun.Status.COMPLETED
    html = alice_client.get(response.url).content.decode()
    assert "Re-assessing" in html
    block = part(html, "fraud-assessment")
    assert f"Re-assessment #{run.pk}" in block and "specialists cached from" in block
    assert "Cached" in part(html, "fraud-evidence-transaction")

    response = alice_client.post(f"/fraud/cases/{alert.case.reference}/rerun/", follow=True)
    assert "Re-running all six agents." in response.content.decode()
    assert latest_run(alert).mode == "alert_creation"
    assert AgentRun.objects.filter(case=alert.case).count() == 3


def test_reassessing_while_a_run_is_active_is_refused_with_a_message(alice_client, queued):
    response = alice_client.post(f"/fraud/cases/{queued.case.reference}/rerun/", follow=True)
    assert "is already being assessed; wait for that run to finish." in response.content.decode()
    assert AgentRun.objects.filter(case=queued.case).count() == 1


@committed
def test_a_closed_case_offers_no_reassessment(alice_client, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    case_close(actor=alice, case=alert.case, outcome="legit", reason="Known customer.")
    block = part(page(alice_client, alert.case), "fraud-assessment")
    assert "Re-assess" not in block and "Re-run all" not in block


# --- closing ---------------------------------------------------------------------------

def test_an_open_case_offers_three_outcomes_sharing_one_required_reason(alice_client, queued):
    html = page(alice_client, queued.case)
    decision = html[html.index('id="decision"'):html.index("Timeline")]
    assert f'action="/cases/{queued.case.reference}/close/"' in decision
    assert '<textarea id="fraud-close-reason" name="reason" rows="3" required' in decision
    assert decision.count('name="reason"') == 1
    for value, label in (("confirmed_fraud", "Confirm Fraud"), ("legit", "Mark Legit"),
                         ("false_positive", "Dismiss as False Positive")):
        assert re.search(rf'<button type="submit" name="outcome" value="{value}"[^>]*>{label}</button>', decision)
    # A second click does not submit again: static/js/casework.js guards forms marked data-submit-once.
    assert 'id="fraud-close-form"' in decision and 'data-submit-once="pressed"' in decision and '<script src="/static/js/casework.js"' in html
    assert "Close case" not in decision


def test_closing_without_a_reason_keeps_the_form_and_says_why(alice_client, queued):
    response = alice_client.post(f"/cases/{queued.case.reference}/close/", {"outcome": "legit", "reason": ""})
    assert response.status_code == 400
    decision = response.content.decode()
    decision = decision[decision.index('id="decision"'):]
    assert "This field is required." in decision
    assert ">Confirm Fraud</button>" in decision
    queued.case.refresh_from_db()
    assert queued.case.status != Case.Status.CLOSED


@committed
def test_confirming_fraud_shows_the_decision_and_the_captured_pattern(alice_client, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    response = alice_client.post(f"/cases/{alert.case.reference}/close/",
                                 {"outcome": "confirmed_fraud", "reason": "Cycling <b>confirmed</b> by the bank."},
                                 follow=True)
    html = response.content.decode()
    decision = html[html.index('id="decision"'):html.index("Timeline")]
    assert "Confirmed fraud" in decision and "by alice" in decision
    assert "Cycling &lt;b&gt;confirmed&lt;/b&gt; by the bank." in decision
    pattern = KnowledgePattern.objects.get(case=alert.case)
    assert "What this case taught us" in decision
    assert pattern.behavioral_pattern.replace("'", "&#x27;") in decision
    assert "Confirm Fraud</button>" not in decision
    # A second close from a stale page is refused and says who closed it.
    response = alice_client.post(f"/cases/{alert.case.reference}/close/",
                                 {"outcome": "legit", "reason": "Second thoughts."}, follow=True)
    assert "was already closed by alice" in response.content.decode()


def test_the_pattern_is_awaited_while_knowledge_capture_runs(alice_client, alice, queued):
    finish(latest_run(queued))
    decision = case_close(actor=alice, case=queued.case, outcome="confirmed_fraud", reason="Confirmed.")
    # case_closed fires on commit, which this test's transaction never reaches: queue the capture by hand.
    capture = pipeline_enqueue(case=queued.case, pipeline="fraud", mode="close", actor=alice,
                               initial_state={"input_decision": decision.pk})
    html = page(alice_client, queued.case)
    assert "Capturing what this case taught us…" in part(html, "fraud-pattern")
    assert 'hx-trigger="every 2s"' in part(html, "fraud-assessment")

    execute_run(capture.pk)
    fragment = alice_client.get(f"/fraud/cases/{queued.case.reference}/assessment/").content.decode()
    assert "hx-trigger" not in fragment
    assert '<div id="fraud-pattern" class="fraud-pattern" hx-swap-oob="true">' in fragment
    assert "What this case taught us" in part(fragment, "fraud-pattern")


# --- untrusted text -----------------------------------------------------------------------

def test_agent_text_is_escaped(alice_client, queued):
    run = latest_run(queued)
    evil = "<script>alert('pwned')</script>"
    set_result(run, "transaction", output={"anomaly_score": 0.9, "detected_patterns": [f"pattern {evil}"],
                                           "short_explanation": f"explained {evil}"})
    set_result(run, "identity", output={"identity_risk": "low", "indicators": [evil], "explanation": evil})
    set_result(run, "orchestrator", stage=1, output={
        "risk_level": "high", "confidence": 0.8, "priority": "high", "key_drivers": [f"driver {evil}"],
        "investigation_summary": f"summary {evil}"})
    set_result(run, "network", error=f"bad answer {evil}", error_type="invalid_output")
    finish(run)
    html = page(alice_client, queued.case)
    assert "<script>alert" not in html
    escaped = "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;"
    assert f"explained {escaped}" in part(html, "fraud-evidence-transaction")
    assert f"driver {escaped}" in part(html, "fraud-risk")
    assert f"summary {escaped}" in part(html, "fraud-copilot")
    assert f"Network agent unavailable: bad answer {escaped}" in part(html, "fraud-assessment")
    assert escaped in part(html, "fraud-evidence-identity")
