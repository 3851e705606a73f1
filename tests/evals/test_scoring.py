"""The scorer on hand-made results: a right trajectory, a wrong order, a forbidden tool, a
wrong decision, a fault that was (or was not) noticed."""

from __future__ import annotations

from agents.evals.runner import Observed
from agents.evals.schema import Scenario
from agents.evals.scoring import score


def scenario(**expect) -> Scenario:
    return Scenario.model_validate({"id": "s", "category": "high", "input": {}, "expect": expect})


def observed(names, *, fields=None, text="", statuses=("completed",), failed=()) -> Observed:
    trajectory = [{"kind": "tool", "name": n, "key": n, "status": "error" if n in failed else "ok",
                   "error_type": "ToolExecution" if n in failed else ""} for n in names]
    return Observed(fields=fields or {}, trajectory=trajectory, run_statuses=list(statuses), text=text)


EXPECT = {"tools_in_order": ["detective", "get_release_summary", "get_test_details", "file_risk_report"],
          "tools_forbidden": ["delete_release"], "fields": {"detective.severity": "high"}}
RIGHT = ["detective", "get_release_summary", "get_test_details", "file_risk_report"]


def test_a_right_trajectory_and_decision_pass_with_full_scores():
    result = score(scenario(**EXPECT), observed(RIGHT, fields={"detective.severity": "high"}))
    assert result.passed, result.failures
    assert result.scores == {"tool_usage": 1.0, "decision_quality": 1.0, "error_handling": 1.0, "groundedness": 1.0}


def test_other_calls_between_the_required_ones_are_allowed():
    names = ["detective", "get_release_summary", "get_release_summary", "get_test_details", "file_risk_report"]
    assert score(scenario(**EXPECT), observed(names, fields={"detective.severity": "high"})).passed


def test_a_wrong_order_fails_tool_usage_and_says_which_call():
    names = ["detective", "get_test_details", "get_release_summary", "file_risk_report"]
    result = score(scenario(**EXPECT), observed(names, fields={"detective.severity": "high"}))
    assert not result.passed
    # detective and get_release_summary matched, get_test_details not after it: 2 of 4; no forbidden: 1.
    assert result.scores["tool_usage"] == 0.75
    assert "'get_test_details' missing or out of order" in result.failures[0]
    assert result.scores["decision_quality"] == 1.0


def test_a_forbidden_tool_fails():
    result = score(scenario(**EXPECT), observed(RIGHT + ["delete_release"], fields={"detective.severity": "high"}))
    assert not result.passed
    assert result.scores["tool_usage"] == 0.5
    assert result.failures == ["tool_usage: forbidden 'delete_release' was called"]


def test_a_wrong_decision_fails_decision_quality_naming_field_and_values():
    result = score(scenario(**EXPECT), observed(RIGHT, fields={"detective.severity": "low"}))
    assert not result.passed
    assert result.scores["decision_quality"] == 0.0
    assert result.failures == ["decision_quality: detective.severity expected 'high', got 'low'"]


def test_a_set_of_acceptable_values_and_a_missing_field():
    spec = scenario(fields={"case.priority": ["high", "critical"], "detective.severity": "high"})
    result = score(spec, observed([], fields={"case.priority": "critical"}))
    assert result.scores["decision_quality"] == 0.5
    assert result.failures == ["decision_quality: detective.severity expected 'high', got absent"]


def test_mentions_are_case_insensitive():
    spec = scenario(must_mention=["Refund_Flow"], must_not_mention=["all tests passed"])
    assert score(spec, observed([], text="Failed test test_refund_flow (payments)")).passed
    result = score(spec, observed([], text="All tests passed"))
    assert result.scores["decision_quality"] == 0.0


def test_a_failed_call_is_an_error_unless_the_scenario_expects_one():
    names = ["detective", "get_release_summary"]
    result = score(scenario(), observed(names, failed={"get_release_summary"}))
    assert not result.passed and result.scores["error_handling"] < 1
    assert score(scenario(errors_expected=True, may_fail=["get_release_summary"]),
                 observed(names, failed={"get_release_summary"})).passed
    # Expecting an error is no licence for any call to fail: only the faulted or named ones.
    collateral = score(scenario(errors_expected=True), observed(names, failed={"get_release_summary"}))
    assert "error_handling: call(s) failed beyond the injected fault: get_release_summary (ToolExecution)" \
        in collateral.failures


def test_an_injected_fault_nobody_noticed_fails_error_handling():
    result = score(scenario(errors_expected=True), observed(["detective"]))
    assert not result.passed
    assert "no call or run records it" in result.failures[0]


def test_a_crash_and_a_run_left_running_fail_error_handling():
    crashed = Observed(crash="KeyError: 'tests'", run_statuses=["running"])
    result = score(scenario(), crashed)
    assert result.scores["error_handling"] == round(1 / 3, 4)
    assert any("crashed: KeyError" in f for f in result.failures)
    assert any("runs did not end (running)" in f for f in result.failures)
