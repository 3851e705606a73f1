"""Groundedness (issue 27, point 2): what a finding or reply states must come from the run's
input or tool results; an invented item fails the scenario, named. One shared checker
(agents.evals.grounding), what to check registered by each case type."""

from __future__ import annotations

import pytest

from agents.evals.adapters import evaluation_of
from agents.evals.grounding import check
from agents.evals.runner import run_scenario
from agents.evals.schema import load_suite
from agents.evals.scoring import score
from agents.llm.offline_registry import OFFLINE_ANALYSTS
from tests.evals.conftest import flush

SOURCES = '{"tests": {"passed": 142, "failed": 2}, "error_rate": 0.02, "p95": 450.0, "name": "test_refund_flow", ' \
          '"amount": 1899.0, "account_id": "ACC-2005"}'


def test_numbers_count_by_value_at_the_precision_stated():
    items = {"test name": r"\btest_\w+"}
    fine = check(["Failed test test_refund_flow: 2 of 144 failed; error rate 2.00%, p95 450 ms (release rel-2-1-0, "
                  "v2.1.0, on 2025-11-10)."], SOURCES + ' "144"', items=items, numbers=True)
    assert fine.invented == [] and fine.checked == 5  # test name, 2, 144, 2.00%, 450
    invented = check(["Error rate 3.00%; test_checkout_v2 failed; 143 tests passed."], SOURCES, items=items,
                     numbers=True)
    assert [(i["kind"], i["item"]) for i in invented.invented] == [
        ("test name", "test_checkout_v2"), ("number", "3.00%"), ("number", "143")]


@pytest.mark.parametrize(("case_type", "statement", "invented"), [
    ("release_risk", "Failed test test_payment_refund_v2: 7 failures.", {"test_payment_refund_v2", "7"}),
    ("fraud_alert", "Account ACC-9999 moved 75,000 through a mule network.", {"ACC-9999", "75,000"}),
    ("access_change", "u099 changed M-0badf00d on 2024-01-01 through R-XX.", {"u099", "M-0badf00d", "2024-01-01",
                                                                             "R-XX"}),
    ("support_ticket", "See kb_999; CUST-777 was refunded €49.00.", {"kb_999", "CUST-777", "€49.00"}),
    ("transaction_investigation", "TX-1-2 on CARD-42 for 5,000.00 EUR.", {"TX-1-2", "CARD-42", "5,000.00 EUR"}),
])
def test_every_type_registers_what_its_statements_must_not_invent(case_type, statement, invented):
    grounding = evaluation_of(case_type).grounding
    result = check([statement], SOURCES, items=grounding.items, numbers=grounding.numbers)
    assert invented <= {i["item"] for i in result.invented}, result.invented


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("case_type", "scenario_id"), [
    ("release_risk", "high_seed_example"), ("fraud_alert", "network_cluster"), ("access_change", "authorised_by_role"),
    ("support_ticket", "billing_double_charge"), ("transaction_investigation", "big_ticket_ambiguous")])
def test_the_offline_agents_are_grounded_and_the_check_has_something_to_check(case_type, scenario_id, settings):
    settings.LLM_PROVIDER = "offline"
    scenario = next(s for s in load_suite(case_type) if s.id == scenario_id)
    observed = run_scenario(case_type, scenario, reset=flush)
    assert observed.grounding["checked"] > 0, scenario.id
    assert observed.grounding["invented"] == []
    assert score(scenario, observed).scores["groundedness"] == 1.0


@pytest.mark.django_db(transaction=True)
def test_an_invented_test_name_in_a_release_finding_fails_the_scenario_named(monkeypatch, settings):
    settings.LLM_PROVIDER = "offline"
    real = OFFLINE_ANALYSTS["detective"]

    def inventive(data, messages=None):
        calls = real(data, messages)
        for call in calls:
            if call["name"] == "file_risk_report":
                call["arguments"]["findings"].append("Failed test test_checkout_timeout (payments): flaky.")
        return calls

    monkeypatch.setitem(OFFLINE_ANALYSTS, "detective", inventive)
    scenario = next(s for s in load_suite("release_risk") if s.id == "high_seed_example")
    result = score(scenario, run_scenario("release_risk", scenario, reset=flush))
    assert not result.passed and result.scores["groundedness"] < 1
    assert any(f.startswith("groundedness: test name 'test_checkout_timeout' is in no input or tool result")
               for f in result.failures), result.failures


@pytest.mark.django_db(transaction=True)
def test_a_chat_scenario_checks_the_answers_tools_and_that_the_case_stayed_as_it_was(monkeypatch, settings):
    """Ask the agent (issue 27, point 7): the real assistant passes; one that invents a failing
    test, and skips the test tool, fails, named."""
    from agents.chat.assistant import ASSISTANT_ID
    from agents.llm.offline_registry import tool_call

    settings.LLM_PROVIDER = "offline"
    chat = next(s for s in load_suite("release_risk") if s.id == "chat_failed_tests_and_no_changes")
    observed = run_scenario("release_risk", chat, reset=flush)
    assert score(chat, observed).passed, score(chat, observed).failures
    assert observed.fields["chat.case_unchanged"] is True
    assert [t["question"] for t in observed.chat] == chat.chat

    def inventive(data, messages=None):
        return {"answer": "Failed tests: test_refund_flow and test_checkout_banner."} if messages and any(
            m.role == "tool" for m in messages) else [tool_call("get_release_summary", 1, release_id="rel-2-1-0")]

    monkeypatch.setitem(OFFLINE_ANALYSTS, ASSISTANT_ID, inventive)
    result = score(chat, run_scenario("release_risk", chat, reset=flush))
    assert "tool_usage: chat.get_test_details arguments (subset): never called" in result.failures
    assert any(f.startswith("groundedness: test name 'test_checkout_banner'") for f in result.failures), \
        result.failures
