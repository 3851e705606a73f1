"""The planner loop with the offline provider: the rule-based planner, the six tools, completion."""

from __future__ import annotations

import pytest

from agents.models import AgentCall, AgentRun
from casework.transactions.models import Investigation, PlannerDecision, ToolExecution
from tests.transactions.conftest import load

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_card_testing_fraud_is_investigated_with_all_six_tools(run_investigation):
    investigation = run_investigation(load("card_testing"))

    assert investigation.status == "COMPLETED", investigation.error
    assert investigation.severity in ("HIGH", "CRITICAL")
    state = investigation.state
    assert state["completed_steps"] == ["context_tool", "pattern_tool", "similarity_tool", "reasoning_tool",
                                        "recommendation_tool", "rule_draft_tool"]
    assert [d.selected_tool for d in PlannerDecision.objects.filter(investigation=investigation)][-1] == "COMPLETE"
    assert not PlannerDecision.objects.filter(investigation=investigation, used_fallback=True).exists()
    assert ToolExecution.objects.filter(investigation=investigation, status="SUCCESS").count() == 6
    assert investigation.rule_draft.backtest["summary"].startswith("Would have fired on")
    assert investigation.recommendations.filter(action="block_card").exists()
    assert investigation.insights.filter(kind="hypothesis", key="card_testing").exists()
    assert investigation.case.priority in ("high", "critical")
    run = AgentRun.objects.get(case=investigation.case)
    assert run.status == "completed"
    assert AgentCall.objects.filter(run=run, kind="tool").count() == 6


def test_an_ordinary_purchase_skips_the_rule_draft(run_investigation):
    investigation = run_investigation(load("ordinary"))

    assert investigation.status == "COMPLETED"
    assert investigation.severity in ("LOW", "MEDIUM")
    assert "rule_draft_tool" not in investigation.state["completed_steps"]
    last = PlannerDecision.objects.filter(investigation=investigation).last()
    assert last.selected_tool == "COMPLETE" and "the rule draft (low severity" in last.reason
    assert not Investigation.objects.get(pk=investigation.pk).recommendations.filter(action="block_card").exists()


def test_the_planner_and_each_tool_have_their_span_with_the_seed_attributes(run_investigation):
    from agents.models import AgentRun
    from audit.tracing import read_trace

    investigation = run_investigation(load("card_testing"))
    run = AgentRun.objects.get(case=investigation.case)
    spans = read_trace(run.trace_id)
    (pipeline,) = [s for s in spans if s["name"] == "pipeline.transactions"]
    planners = [s for s in spans if s["name"] == "agent.planner"]
    tools = {s["name"]: s for s in spans if s["name"].startswith("agent.tool.")}

    assert [p["attributes"]["selected_tool"] for p in planners][-1] == "COMPLETE"
    assert planners[0]["attributes"]["investigation_id"] == str(investigation.pk)
    assert planners[0]["attributes"]["step_count"] == 1 and planners[0]["attributes"]["used_fallback"] is False
    assert set(tools) == {f"agent.tool.{t}" for t in investigation.state["completed_steps"]}
    assert "execution_time_ms" in tools["agent.tool.pattern_tool"]["attributes"]
    assert {s["parent_id"] for s in [*planners, *tools.values()]} == {pipeline["span_id"]}


@pytest.mark.parametrize("kind", ["big_ticket", "big_ticket_known_online"])
def test_a_large_purchase_in_character_for_the_card_is_medium_not_high(run_investigation, kind):
    """Issue 43: a large purchase at a merchant the card has used before, at home (from the
    device it always uses, when online) was HIGH on its amount alone; the card's own history
    says it is in character: contact the cardholder, do not block the card."""
    investigation = run_investigation(load(kind))
    assert investigation.status == "COMPLETED"
    assert investigation.severity == "MEDIUM", investigation.state["reasoning"]
    actions = set(investigation.recommendations.values_list("action", flat=True))
    assert "contact_cardholder" in actions and "block_card" not in actions
    assert "used before" in investigation.state["pattern_results"]["patterns"][1]["detail"]
