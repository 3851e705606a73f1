"""Tool-argument and trajectory checks (issue 27, point 3): expected arguments per tool call
(exact, subset, pattern), forbidden calls, order pairs, the most calls; in the scenario file."""

from __future__ import annotations

import pytest

from agents.evals.runner import Observed, run_scenario
from agents.evals.schema import Scenario, load_suite
from agents.evals.scoring import score
from agents.llm.offline_registry import OFFLINE_ANALYSTS
from tests.evals.conftest import flush


def scenario(**expect) -> Scenario:
    return Scenario.model_validate({"id": "s", "category": "high", "input": {}, "expect": expect})


def observed(*calls) -> Observed:
    return Observed(trajectory=[{"kind": "tool", "name": n, "key": n, "status": "ok", "error_type": ""}
                                for n, _ in calls],
                    tool_calls=[{"name": n, "arguments": a, "status": "ok", "answer": {}} for n, a in calls],
                    run_statuses=["completed"])


SUMMARY = ("get_release_summary", {"release_id": "rel-1"})
FILE = ("file_risk_report", {"release_id": "rel-1", "severity": "high", "findings": ["x"]})


@pytest.mark.parametrize(("wanted", "passes"), [
    ({"tool": "file_risk_report", "args": {"severity": "high"}}, True),
    ({"tool": "file_risk_report", "args": {"severity": "low"}}, False),
    ({"tool": "file_risk_report", "args": {"severity": "high"}, "match": "exact"}, False),
    ({"tool": "get_release_summary", "args": {"release_id": "rel-1"}, "match": "exact"}, True),
    ({"tool": "file_risk_report", "args": {"release_id": r"rel-\d+", "severity": "high|medium"}, "match": "regex"},
     True),
    ({"tool": "file_risk_report", "args": {"release_id": r"rel-\d{3}"}, "match": "regex"}, False),
    ({"tool": "get_test_details", "args": {}}, False),
])
def test_expected_arguments_exact_subset_or_pattern(wanted, passes):
    assert score(scenario(tool_calls=[wanted]), observed(SUMMARY, FILE)).passed is passes


def test_every_call_or_any_call_of_a_tool():
    twice = observed(SUMMARY, ("get_release_summary", {"release_id": "rel-2"}), FILE)
    any_call = {"tool": "get_release_summary", "args": {"release_id": "rel-1"}}
    assert score(scenario(tool_calls=[any_call]), twice).passed
    result = score(scenario(tool_calls=[{**any_call, "calls": "every"}]), twice)
    assert result.failures == ["tool_usage: get_release_summary arguments (subset): release_id expected 'rel-1', "
                               "got 'rel-2'"]


def test_forbidden_calls_order_and_most_calls():
    calls = observed(FILE, SUMMARY, SUMMARY)
    result = score(scenario(forbidden_calls=[{"tool": "file_risk_report", "args": {"severity": "high"}}],
                            order=[["get_release_summary", "file_risk_report"]],
                            max_calls={"get_release_summary": 1, "*": 5}), calls)
    assert result.failures == [
        "tool_usage: forbidden call file_risk_report(release_id='rel-1', severity='high', findings=['x'])",
        "tool_usage: 'get_release_summary' must come before 'file_risk_report'; 'file_risk_report' came first",
        "tool_usage: 'get_release_summary' called 2 times, at most 1 allowed"]
    assert result.scores["tool_usage"] == 0.25
    assert score(scenario(forbidden_calls=[{"tool": "file_risk_report", "args": {"severity": "low"}}]), calls).passed


def test_a_bad_pattern_is_refused_in_the_file():
    with pytest.raises(ValueError, match="not a regular expression"):
        scenario(tool_calls=[{"tool": "t", "args": {"x": "("}, "match": "regex"}])


@pytest.mark.django_db(transaction=True)
def test_a_wrong_tool_argument_fails_the_seed_scenario(monkeypatch, settings):
    """A detective that files the report for another release id than the one it was given."""
    settings.LLM_PROVIDER = "offline"
    real = OFFLINE_ANALYSTS["detective"]

    def sloppy(data, messages=None):
        calls = real(data, messages)
        for call in calls:
            if call["name"] == "get_release_summary":
                call["arguments"]["release_id"] = data["release_id"].upper()
        return calls

    monkeypatch.setitem(OFFLINE_ANALYSTS, "detective", sloppy)
    seed = next(s for s in load_suite("release_risk") if s.id == "high_seed_example")
    result = score(seed, run_scenario("release_risk", seed, reset=flush))
    assert ("tool_usage: get_release_summary arguments (exact): release_id expected 'rel-2-1-0', got 'REL-2-1-0'"
            in result.failures), result.failures
