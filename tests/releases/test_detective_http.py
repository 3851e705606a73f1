"""The detective over HTTP, through the real `openai` and `anthropic` SDKs against the fake
servers: real tool calls, the order of calls, a failing tool, retries, a 401, a tiny context
window, and the trace file."""

from __future__ import annotations

import pytest

from agents.models import AgentCall
from audit.tracing import read_trace
from tests.fakes.fixtures import fake_anthropic, fake_openai  # noqa: F401 - fixtures
from tests.fakes.llm_servers import FakeAnthropicServer, error, rate_limited, tool_calls
from tests.releases.conftest import LOW, MEDIUM, SEED, release, submit, t
from tests.releases.fake_model import play_detective, tool_results

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["fake_openai", "fake_anthropic"])
def llm(request):
    server = request.getfixturevalue(request.param)
    server.handler = play_detective
    return server


def tools_called(run) -> list[str]:
    return list(AgentCall.objects.filter(run=run, kind="tool").order_by("id").values_list("name", flat=True))


@pytest.mark.parametrize("data, severity", [(SEED, "high"), (MEDIUM, "medium"), (LOW, "low")])
def test_severity_over_the_wire(llm, data, severity):
    rel, run = submit(data)

    report = rel.reports.get()
    assert report.severity == severity
    assert report.provider == ("anthropic" if isinstance(llm, FakeAnthropicServer) else "openai")
    assert run.status == "completed"


def test_tools_run_in_order_and_the_report_is_filed_once(llm):
    rel, run = submit(SEED)

    assert tools_called(run) == ["get_release_summary", "get_test_details", "file_risk_report"]
    assert llm.request_count == 3  # one request per tool turn; the final tool ends the loop
    summary, = tool_results(llm.requests[1].json)
    assert summary["version"] == "v2.1.0" and summary["tests"]["failed"] == 2
    assert rel.reports.count() == 1
    report = rel.reports.get()
    filed = AgentCall.objects.get(run=run, name="file_risk_report")
    assert filed.output["result"]["report_id"] == report.report_id
    assert filed.input["severity"] == "high"


def test_a_failing_tool_is_read_back_as_an_error_and_the_report_still_filed(llm, monkeypatch):
    from casework.releases import selectors

    def down(release_id):
        raise TimeoutError("test-results service did not answer")

    monkeypatch.setattr(selectors, "release_test_details", down)
    rel, run = submit(release(SEED, changes=["Tooltip fixes"]))

    results = tool_results(llm.requests[2].json)
    assert results[1] == {"error": "ToolExecution",
                          "message": "get_test_details failed: TimeoutError: test-results service did not answer"}
    report = rel.reports.get()
    # The detective, blind to the details, filed medium; the release's own records show a failed
    # critical test (test_refund_flow), so code files it high (issue 22's guard).
    assert (report.adjusted_from, report.severity) == ("medium", "high")
    assert "Failed test test_refund_flow (payments, critical): refund total 0.00 != 19.99" in report.adjusted_reason
    assert any("test-results service did not answer" in m for m in report.missing_data)


def test_a_rate_limit_with_retry_after_is_retried_then_succeeds(llm):
    llm.script(rate_limited(retry_after=0.2))

    rel, run = submit(LOW)

    assert rel.reports.get().severity == "low"
    agent_call = AgentCall.objects.get(run=run, kind="agent")
    first = agent_call.attempt_log[0]
    assert first["error_type"] == "rate_limit" and first["backoff_s"] >= 0.2
    assert llm.requests[1].received_at - llm.requests[0].received_at >= 0.2
    assert llm.request_count == 3  # 429, then summary, then file


@pytest.mark.parametrize("status, message", [(401, "Incorrect API key provided."), (403, "Model access denied."),
                                             (400, "Unknown parameter: tools.")])
def test_a_401_403_or_400_fails_at_once_with_a_clear_message_on_the_case(llm, alice_client, status, message):
    llm.script(error(status, message, type="invalid_request_error" if status == 400 else "authentication_error"))

    rel, run = submit(LOW)

    assert llm.request_count == 1
    assert rel.reports.count() == 0
    assert rel.assessment == "failed"
    assert message in rel.assessment_error
    page = alice_client.get(f"/cases/{rel.case.reference}/").content.decode()
    assert "The detective failed" in page


def test_a_tiny_context_window_prunes_records_it_and_still_files(llm, settings):
    many = [t(f"test_case_{n:03d}", "reports", "failed", False, "x" * 120) for n in range(40)]
    changes = [f"Report layout change number {n} for the quarterly export" for n in range(30)]
    data = release(MEDIUM, tests={"passed": 10, "failed": 40, "skipped": 0}, test_details=many, changes=changes)
    # A window (budget 3,100 tokens) that holds the task and the test details (~2,900) but not
    # the summary (~500) as well.
    settings.LLM_CONTEXT_TOKENS = 1024 + 3445
    llm.handler = None
    llm.script(tool_calls(("get_release_summary", {"release_id": "rel-2-0-3"})),
               tool_calls(("get_test_details", {"release_id": "rel-2-0-3"})),
               tool_calls(("file_risk_report", {"release_id": "rel-2-0-3", "severity": "medium",
                                                "findings": ["40 of 50 tests failed in reports."]})))
    rel, run = submit(data)

    events = run.results["detective"]["context_events"]
    assert events and {e["strategy"] for e in events} == {"truncate"}
    assert all(e["tokens_after"] <= e["budget"] for e in events)
    last = tool_results(llm.requests[-1].json)
    assert len(last) == 1 and len(last[0]["tests"]) == 40  # the summary was dropped, the details kept
    assert rel.reports.get().severity == "medium"


def test_the_trace_file_holds_the_agent_llm_and_tool_spans(llm):
    rel, run = submit(SEED)

    names = [s["name"] for s in read_trace(run.trace_id)]
    assert "agent.detective" in names
    assert names.count("llm.request") == 3
    assert {"tool.get_release_summary", "tool.get_test_details", "tool.file_risk_report"} <= set(names)
