"""The judge is skipped offline (never faked, left out of the averages) and scores with a key;
injected faults hit only the named calls and are gone when the scenario ends."""

from __future__ import annotations

import json

import pytest

from agents.evals import faults
from agents.evals.judge import SKIPPED_OFFLINE, Judge
from agents.evals.report import build_report
from agents.evals.runner import Observed
from agents.evals.schema import Fault, Scenario
from agents.llm import registry
from agents.llm.base import Completion, LLMRequest, Message
from agents.runtime.tools import ToolRegistry

SCENARIO = Scenario.model_validate({"id": "s", "category": "c", "input": {"release_id": "r"},
                                    "expect": {"rubric": "Findings quote the failing test."}})


def test_the_judge_is_skipped_offline_and_left_out_of_the_averages(settings):
    settings.EVAL_JUDGE_API_KEY = ""
    assert Judge.from_settings() is None
    result = {"id": "s", "category": "c", "status": "passed", "failures": [], "judge": dict(SKIPPED_OFFLINE),
              "scores": {"tool_usage": 1.0, "decision_quality": 1.0, "error_handling": 1.0}}
    report = build_report("release_risk", [result], config={}, seconds=0)
    assert report["summary"]["judge"] == "skipped"
    assert "judge" not in report["summary"]["avg_scores"]
    assert "never runs offline" in SKIPPED_OFFLINE["reason"]


class FakeJudgeProvider:
    model = "judge-model"

    def __init__(self, text):
        self.text, self.requests = text, []

    def complete(self, request: LLMRequest) -> Completion:
        self.requests.append(request)
        return Completion(text=self.text)


def test_with_a_key_the_judge_grades_against_the_rubric_and_counts_in_the_averages():
    provider = FakeJudgeProvider(json.dumps({"score": 0.8, "reason": "Quotes the test."}))
    verdict = Judge(provider).grade(SCENARIO, Observed(text="Failed test test_refund_flow"))
    assert verdict == {"status": "scored", "score": 0.8, "reason": "Quotes the test.", "model": "judge-model"}
    assert "Findings quote the failing test." in provider.requests[0].messages[1].content
    result = {"id": "s", "category": "c", "status": "passed", "failures": [], "judge": verdict,
              "scores": {"tool_usage": 1.0, "decision_quality": 1.0, "error_handling": 1.0}}
    assert build_report("x", [result], config={}, seconds=0)["summary"]["avg_scores"]["judge"] == 0.8


def test_a_judge_answer_out_of_range_is_an_error_not_a_grade():
    verdict = Judge(FakeJudgeProvider('{"score": 7, "reason": "x"}')).grade(SCENARIO, Observed())
    assert verdict["status"] == "error"


class Inner:
    name, model = "offline", "m"

    def complete(self, request):
        return Completion(text="{}")


@pytest.mark.parametrize(("kind", "error"), [("error", "ProviderError"), ("timeout", "TimeoutError")])
def test_llm_faults_hit_only_the_named_agent_and_only_times_calls(kind, error):
    plan = faults.FaultPlan([Fault(target="llm", name="detective", kind=kind, times=1)])
    provider = faults.FaultyProvider(Inner(), plan)
    request = LLMRequest(messages=[Message(role="user", content="x")], agent_id="detective")
    with pytest.raises(Exception) as caught:
        provider.complete(request)
    assert type(caught.value).__name__ == error
    assert provider.complete(request).text == "{}"  # the second call passes
    assert provider.complete(LLMRequest(messages=[], agent_id="other")).text == "{}"
    assert plan.fired == [{"target": "llm", "name": "detective", "kind": kind}]


def test_a_malformed_answer_is_text_that_fits_no_schema():
    plan = faults.FaultPlan([Fault(target="llm", name="a", kind="malformed")])
    assert faults.FaultyProvider(Inner(), plan).complete(LLMRequest(messages=[], agent_id="a")).text == \
        faults.MALFORMED_TEXT


def test_tool_faults_and_the_provider_are_restored_when_the_scenario_ends():
    from agents.llm.base import ToolCall

    before_provider = registry._provider
    before_execute = ToolRegistry.aexecute
    with faults.inject([Fault(target="tool", name="get_release_summary", kind="timeout")]):
        assert isinstance(registry._provider, faults.FaultyProvider)
        result = ToolRegistry([]).execute(ToolCall(id="1", name="get_release_summary", arguments={}))
        assert (result.success, result.error_type) == (False, "ToolTimeout")
        other = ToolRegistry([]).execute(ToolCall(id="2", name="nope", arguments={}))
        assert other.error_type == "ToolNotFound"  # not faulted: the real registry answered
    assert registry._provider is before_provider
    assert ToolRegistry.aexecute is before_execute
