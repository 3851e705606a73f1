"""Injected faults hit only the named calls and are gone when the scenario ends (the judge's
tests are in test_rubrics.py)."""

from __future__ import annotations

import pytest

from agents.evals import faults
from agents.evals.schema import Fault
from agents.llm import registry
from agents.llm.base import Completion, LLMRequest, Message
from agents.runtime.tools import ToolRegistry


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
