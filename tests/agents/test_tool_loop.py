"""The tool loop (seed 004, section 5) over several turns through both fakes: call, run the
tools asked for, send their results back, call again, until the final tool or answer, or a
cap on turns or tool calls."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from agents.runtime.agent import Agent
from agents.runtime.prompting import fence_data, unfence_data
from agents.runtime.runner import run_agent, run_tool_loop
from agents.runtime.tools import Tool
from tests.fakes.llm_servers import FakeToolCall, error, text, tool_calls

# --- The detective agent of seed 004, in miniature -----------------------------------------

SUMMARIES = {
    "v2.1.0": {"version": "v2.1.0", "changes": ["Added payment processing", "Fixed authentication bug"],
               "tests": {"passed": 142, "failed": 2, "skipped": 5},
               "deployment_metrics": {"error_rate": 0.02, "response_time_p95": 450}},
}
FILED: list[dict] = []


class ReleaseQuery(BaseModel):
    release_id: str = Field(description="The release, e.g. v2.1.0.")


class SuiteQuery(BaseModel):
    release_id: str
    suite: str = Field(description="Test suite name.")


class RiskReport(BaseModel):
    release_id: str
    severity: str = Field(pattern="^(low|medium|high)$", description="low, medium or high")
    findings: list[str] = Field(description="One concern per item.")


def get_release_summary(args: ReleaseQuery) -> dict:
    """Release metadata: changes, test results, deployment metrics."""
    return SUMMARIES[args.release_id]


def get_test_details(args: SuiteQuery) -> dict:
    """The failing tests of one suite."""
    return {"suite": args.suite, "failed": ["test_refund_rounding", "test_card_declined_retry"]}


def file_risk_report(args: RiskReport) -> dict:
    """File the risk assessment."""
    FILED.append(args.model_dump())
    return {"report_id": f"R-{len(FILED)}"}


TOOLS = (
    Tool("get_release_summary", get_release_summary.__doc__, ReleaseQuery, get_release_summary, consequence="read_only"),
    Tool("get_test_details", get_test_details.__doc__, SuiteQuery, get_test_details, consequence="read_only"),
    Tool("file_risk_report", file_risk_report.__doc__, RiskReport, file_risk_report, consequence="drafts"),
)
detective = Agent(id="test_detective", system_prompt="Assess the release's risk, then file a report.",
                  output_model=RiskReport, tools=TOOLS, final_tool="file_risk_report")
# The same tools, but the agent ends with a JSON answer instead of a final tool.
answering_detective = Agent(id="test_detective_answers", system_prompt="Assess the release's risk.",
                            output_model=RiskReport, tools=TOOLS[:2])

REPORT = {"release_id": "v2.1.0", "severity": "high",
          "findings": ["2 payment tests fail", "error rate 2%"]}


@pytest.fixture(autouse=True)
def _no_reports_yet():
    FILED.clear()


def three_turns(**ids) -> list:
    return [
        tool_calls(FakeToolCall("get_release_summary", {"release_id": "v2.1.0"}, id=ids.get("a", "call_a"))),
        tool_calls(FakeToolCall("get_test_details", {"release_id": "v2.1.0", "suite": "payments"},
                                id=ids.get("b", "call_b"))),
        tool_calls(FakeToolCall("file_risk_report", REPORT, id=ids.get("c", "call_c"))),
    ]


def test_it_runs_tools_over_several_turns_until_the_final_tool(fake_openai):
    fake_openai.script(*three_turns())

    result = run_agent(detective, {"release_id": "v2.1.0"})

    assert result.ok, result.error
    assert result.output == REPORT
    assert FILED == [REPORT]
    assert fake_openai.request_count == 3
    assert [(c["turn"], c["name"], c["success"]) for c in result.tool_calls] == [
        (1, "get_release_summary", True), (2, "get_test_details", True), (3, "file_risk_report", True)]
    # Every request offers the three tools, in OpenAI's function format.
    for request in fake_openai.requests:
        assert [t["function"]["name"] for t in request.json["tools"]] == [
            "get_release_summary", "get_test_details", "file_risk_report"]
        assert "response_format" not in request.json
    # Each turn sends back the model's tool call and the tool's result, linked by id.
    second = fake_openai.requests[1].messages
    assert second[-2]["role"] == "assistant"
    assert second[-2]["tool_calls"][0]["id"] == "call_a"
    assert second[-1] == {"role": "tool", "tool_call_id": "call_a",
                          "content": fence_data(SUMMARIES["v2.1.0"], label="tool-result:get_release_summary")}
    third = fake_openai.requests[2].messages
    assert [m["role"] for m in third] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert unfence_data(third[-1]["content"])["failed"] == ["test_refund_rounding", "test_card_declined_retry"]


def test_it_can_end_with_a_json_answer_instead_of_a_final_tool(fake_openai):
    fake_openai.script(three_turns()[0], text(f"Done. ```json\n{json.dumps(REPORT)}\n```"))

    result = run_agent(answering_detective, {"release_id": "v2.1.0"})

    assert result.ok, result.error
    assert result.output == REPORT
    assert fake_openai.request_count == 2


def test_tool_failures_go_back_to_the_model_and_the_loop_goes_on(fake_openai):
    fake_openai.script(
        tool_calls(("delete_release", {"release_id": "v2.1.0"})),
        tool_calls(("get_release_summary", '{"release_id": ')),
        tool_calls(("file_risk_report", {"release_id": "v2.1.0", "severity": "catastrophic", "findings": []})),
        tool_calls(("file_risk_report", REPORT)),
    )

    result = run_agent(detective, {"release_id": "v2.1.0"})

    assert result.ok, result.error
    assert [c["error_type"] for c in result.tool_calls] == ["ToolNotFound", "InvalidArguments", "InvalidArguments", ""]
    seen = [unfence_data(r.messages[-1]["content"]) for r in fake_openai.requests[1:]]
    assert [s["error"] for s in seen] == ["ToolNotFound", "InvalidArguments", "InvalidArguments"]
    assert "severity" in seen[2]["message"]
    assert FILED == [REPORT]


def test_an_answer_without_the_final_tool_is_asked_to_finish_with_it(fake_openai):
    fake_openai.script(text("The release looks risky."), tool_calls(("file_risk_report", REPORT)))

    result = run_agent(detective, {"release_id": "v2.1.0"})

    assert result.ok
    nudge = fake_openai.requests[1].messages[-1]
    assert nudge == {"role": "user", "content": "Finish by calling file_risk_report."}


def test_it_runs_the_same_loop_through_anthropic(fake_anthropic):
    fake_anthropic.script(*three_turns(a="toolu_a", b="toolu_b", c="toolu_c"))

    result = run_agent(detective, {"release_id": "v2.1.0"})

    assert result.ok, result.error
    assert result.output == REPORT
    assert fake_anthropic.request_count == 3
    first = fake_anthropic.requests[0].json
    assert [t["name"] for t in first["tools"]] == ["get_release_summary", "get_test_details", "file_risk_report"]
    assert first["tools"][0]["input_schema"]["required"] == ["release_id"]
    third = fake_anthropic.requests[2].json["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant", "user"]
    assert third[1]["content"] == [{"type": "tool_use", "id": "toolu_a", "name": "get_release_summary",
                                    "input": {"release_id": "v2.1.0"}}]
    assert third[2]["content"][0]["type"] == "tool_result"
    assert third[2]["content"][0]["tool_use_id"] == "toolu_a"
    assert third[4]["content"][0]["tool_use_id"] == "toolu_b"


def test_the_turn_cap_ends_the_loop_with_an_error_result(fake_openai):
    fake_openai.default = lambda body: tool_calls(("get_release_summary", {"release_id": "v2.1.0"}))

    result = run_tool_loop(detective, {"release_id": "v2.1.0"}, max_turns=3)

    assert not result.ok
    assert result.error_type == "turn_cap"
    assert "after 3 turns" in result.error
    assert fake_openai.request_count == 3
    assert len(result.tool_calls) == 3


def test_the_tool_call_cap_ends_the_loop_with_an_error_result(fake_openai):
    fake_openai.default = lambda body: tool_calls(*[("get_release_summary", {"release_id": "v2.1.0"})] * 3)

    result = run_tool_loop(detective, {"release_id": "v2.1.0"}, max_tool_calls=4)

    assert not result.ok
    assert result.error_type == "tool_call_cap"
    assert "after 4 tool calls" in result.error
    assert len(result.tool_calls) == 4
    assert fake_openai.request_count == 2


def test_a_provider_failure_mid_loop_is_an_error_result_that_keeps_the_tool_calls(fake_openai):
    fake_openai.script(three_turns()[0], error(401, "Key revoked"))

    result = run_agent(detective, {"release_id": "v2.1.0"})

    assert result.error_type == "authentication"
    assert [c["name"] for c in result.tool_calls] == ["get_release_summary"]


def test_a_final_tool_whose_arguments_do_not_fit_the_output_model_is_an_error_result(fake_openai):
    # The final tool accepts what the output model does not: the result says so, nothing raises.
    class Loose(BaseModel):
        release_id: str

    loose = Agent(id="test_detective_loose", system_prompt="Assess.", output_model=RiskReport,
                  tools=(Tool("file_note", "File a note.", Loose, lambda args: {"ok": True}, consequence="drafts"),), final_tool="file_note")
    fake_openai.script(tool_calls(("file_note", {"release_id": "v2.1.0"})))

    result = run_agent(loose, {"release_id": "v2.1.0"})

    assert not result.ok
    assert result.error_type == "invalid_output"
    assert "severity" in result.error


def test_a_second_run_starts_from_a_fresh_conversation(fake_openai):
    fake_openai.script(*three_turns(), *three_turns())

    first = run_agent(detective, {"release_id": "v2.1.0"})
    second = run_agent(detective, {"release_id": "v2.1.0"})

    assert first.output == second.output == REPORT
    assert len(first.tool_calls) == len(second.tool_calls) == 3
    assert [m["role"] for m in fake_openai.requests[3].messages] == ["system", "user"]
