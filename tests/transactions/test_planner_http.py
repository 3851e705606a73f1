"""Each rule of the planner through the fake OpenAI-compatible server (the real `openai`
SDK over HTTP): a rejected tool name, a tool out of order, a repeated tool, an invalid
answer, a timeout and max_steps. Only the planner calls the model; the tools run directly.

The fake answers planner requests like the offline planner would (it reads the fenced
state from the user message), unless a test scripted other answers first.
"""

from __future__ import annotations

import json
import re

import pytest

from casework.transactions.agents.planner import offline_planner
from casework.transactions.models import PlannerDecision
from tests.fakes.llm_servers import json_answer, text
from tests.transactions.conftest import investigate, load

pytestmark = pytest.mark.django_db(transaction=True)

_FENCE = re.compile(r"<case-data[^>]*>\n(.*)\n</case-data>", re.DOTALL)


def planner_state(body: dict) -> dict:
    return json.loads(_FENCE.search(body["messages"][-1]["content"]).group(1))


@pytest.fixture
def llm(fake_openai):
    fake_openai.handler = lambda body: json_answer(offline_planner(planner_state(body)))
    return fake_openai


def decisions(investigation) -> list[PlannerDecision]:
    return list(PlannerDecision.objects.filter(investigation=investigation).order_by("step"))


def choose(tool: str) -> object:
    return json_answer({"tool": tool, "reason": f"I pick {tool}.", "confidence": 0.7})


def test_a_well_behaved_model_plans_the_whole_investigation(llm):
    investigation = investigate(load("card_testing"))

    assert investigation.status == "COMPLETED", investigation.error
    assert [d.selected_tool for d in decisions(investigation)] == [
        "context_tool", "pattern_tool", "similarity_tool", "reasoning_tool", "recommendation_tool",
        "rule_draft_tool", "COMPLETE"]
    assert not any(d.used_fallback for d in decisions(investigation))
    first = llm.requests[0].json
    assert first["temperature"] == 0.1 and first["max_tokens"] == 256
    assert planner_state(first)["completed_steps"] == [] and planner_state(first)["has_context"] is False


def test_a_tool_name_that_is_not_registered_falls_back(llm):
    llm.script(choose("wire_money_tool"))
    first = decisions(investigate(load("card_testing")))[0]

    assert first.selected_tool == "context_tool" and first.used_fallback
    assert "not a registered tool" in first.rejected and "wire_money_tool" in first.rejected


def test_a_tool_out_of_order_and_a_repeated_tool_fall_back(llm):
    llm.script(choose("context_tool"), choose("reasoning_tool"), choose("context_tool"))
    steps = decisions(investigate(load("card_testing")))

    assert not steps[0].used_fallback
    assert steps[1].used_fallback and steps[1].selected_tool == "pattern_tool"
    assert "reasoning_tool needs pattern_tool and similarity_tool first" in steps[1].rejected
    assert steps[2].used_fallback and steps[2].selected_tool == "similarity_tool"
    assert "already ran" in steps[2].rejected


def test_a_tool_before_context_and_complete_before_reasoning_fall_back(llm):
    llm.script(choose("pattern_tool"), choose("COMPLETE"))
    steps = decisions(investigate(load("card_testing")))

    assert steps[0].selected_tool == "context_tool" and "context_tool must run first" in steps[0].rejected
    assert steps[1].selected_tool == "pattern_tool" and "COMPLETE before reasoning_tool" in steps[1].rejected


def test_an_invalid_answer_is_repaired_once_then_falls_back(llm):
    llm.script(text("Probably the context tool?"), text('{"tool": "context_tool", "reason": '))
    investigation = investigate(load("card_testing"))
    first = decisions(investigation)[0]

    assert first.used_fallback and first.selected_tool == "context_tool"
    assert "invalid_output" in first.rejected
    assert investigation.status == "COMPLETED"


def test_a_planner_timeout_falls_back_at_once_without_retrying(llm, settings):
    settings.TXN_PLANNER_TIMEOUT_SECONDS = 0.3
    llm.script(json_answer({"tool": "context_tool", "reason": "slow", "confidence": 0.5}, delay=1.5))
    investigation = investigate(load("card_testing"))
    first = decisions(investigation)[0]

    assert first.used_fallback and first.selected_tool == "context_tool"
    assert "timeout" in first.rejected.lower()
    assert investigation.status == "COMPLETED"
    assert len(llm.requests) == len(decisions(investigation))  # one request per decision: no retry


def test_max_steps_ends_the_investigation_with_what_it_found(llm, settings):
    settings.TXN_MAX_STEPS = 3
    investigation = investigate(load("card_testing"))

    assert investigation.status == "STOPPED" and investigation.is_resumable  # issue 43: not Completed
    assert len(decisions(investigation)) == 3
    # The third decision reached the limit: its tool does not run (seed 3.3).
    assert investigation.state["completed_steps"] == ["context_tool", "pattern_tool"]
    assert "step limit (3 planner steps)" in investigation.error
    assert investigation.state["pattern_results"]["flagged"]
