"""The planner's rules, its fallback and the offline planner: pure functions of the state."""

from __future__ import annotations

import pytest

from casework.transactions.agents.planner import offline_planner, planner_input
from casework.transactions.agents.state import create_initial_state, deterministic_fallback, rule_violation


def state(done=(), history=5, severity="HIGH", context=True) -> dict:
    s = create_initial_state(investigation_id=1, transaction_id="TX-1", max_steps=20, safeguards={}, feature_flags={})
    s["completed_steps"] = list(done)
    s["severity"] = severity
    if context:
        s["context"] = {"history_count": history, "history_days": 90, "transaction": {
            "amount": 10, "currency": "EUR", "merchant": "M", "mcc": "5411", "country": "NL", "channel": "pos"}}
    return s


@pytest.mark.parametrize(("tool", "done", "expected"), [
    ("pattern_tool", (), "context_tool must run first"),
    ("magic_tool", ("context_tool",), "not a registered tool"),
    ("context_tool", ("context_tool",), "already ran"),
    ("reasoning_tool", ("context_tool", "pattern_tool"), "needs similarity_tool"),
    ("recommendation_tool", ("context_tool", "pattern_tool", "similarity_tool"), "needs reasoning_tool"),
    ("rule_draft_tool", ("context_tool", "pattern_tool", "similarity_tool", "reasoning_tool"),
     "needs recommendation_tool"),
    ("COMPLETE", ("context_tool", "pattern_tool"), "COMPLETE before reasoning_tool"),
])
def test_each_rule_names_what_it_refuses(tool, done, expected):
    assert expected in rule_violation(tool, state(done, context=bool(done)))


def test_reasoning_needs_no_similarity_for_a_card_without_history():
    assert rule_violation("reasoning_tool", state(("context_tool", "pattern_tool"), history=0)) is None


def test_the_fallback_takes_the_first_tool_not_done_then_completes():
    assert deterministic_fallback(state(("context_tool", "similarity_tool"))) == "pattern_tool"
    assert deterministic_fallback(state(("context_tool", "pattern_tool", "similarity_tool", "reasoning_tool",
                                         "recommendation_tool", "rule_draft_tool"))) == "COMPLETE"


def test_the_offline_planner_skips_what_the_evidence_makes_useless():
    no_history = offline_planner(planner_input(state(("context_tool", "pattern_tool"), history=0)))
    assert no_history["tool"] == "reasoning_tool" and "no history" in no_history["reason"]
    low = offline_planner(planner_input(state(("context_tool", "pattern_tool", "similarity_tool", "reasoning_tool",
                                               "recommendation_tool"), severity="MEDIUM")))
    assert low["tool"] == "COMPLETE" and "the rule draft (medium severity" in low["reason"]
    failed_context = planner_input(state(("context_tool",), context=False))
    assert offline_planner(failed_context)["tool"] == "COMPLETE"
