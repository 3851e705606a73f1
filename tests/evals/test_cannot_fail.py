"""Scenarios that could not fail (issue 27, point 9), each shown failing on a broken agent:
the malformed-summary fault, exported release cases, and the regression gate without a
baseline."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from agents.evals.runner import run_scenario
from agents.evals.schema import load_suite
from agents.evals.scoring import score
from agents.llm.offline_registry import OFFLINE_ANALYSTS, tool_call, tool_results
from tests.evals.conftest import flush

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.LLM_PROVIDER = "offline"


def scenario(suite: str, scenario_id: str):
    return next(s for s in load_suite(suite) if s.id == scenario_id)


def careless_detective(data: dict, messages=None):
    """Reads the summary without looking whether the tool failed: KeyError 'tests' on an error."""
    seen = tool_results(messages)
    if "get_release_summary" not in seen:
        return [tool_call("get_release_summary", 1, release_id=data["release_id"])]
    summary = seen["get_release_summary"][-1]
    return [tool_call("file_risk_report", 1, release_id=data["release_id"],
                      severity="high" if summary["tests"]["failed"] else "low", findings=["Looked at it."])]


def test_fault_summary_malformed_passes_the_real_detective_and_fails_a_crashing_one(monkeypatch):
    malformed = scenario("release_risk", "fault_summary_malformed")
    observed = run_scenario("release_risk", malformed, reset=flush)
    result = score(malformed, observed)
    assert result.passed, result.failures
    # The tool's own output check refused the garbage; the detective read the error and went on.
    steps = {s["name"]: s for s in observed.trajectory}
    assert steps["get_release_summary"]["status"] != "ok" and steps["detective"]["status"] == "ok"

    monkeypatch.setitem(OFFLINE_ANALYSTS, "detective", careless_detective)
    observed = run_scenario("release_risk", malformed, reset=flush)
    result = score(malformed, observed)
    assert not result.passed
    assert any("detective" in f and "beyond the injected fault" in f for f in result.failures), result.failures
    assert any("record.assessment expected 'filed', got 'failed'" in f for f in result.failures), result.failures


def test_an_exported_go_release_fails_a_detective_that_always_says_medium(monkeypatch, rita):
    from agents.evals.export import scenario_data
    from agents.evals.schema import Scenario
    from casework.releases.evals import DECISION_FIELDS
    from tests.evals.test_export import submitted_release
    from tests.releases.conftest import LOW

    # Each outcome expects one severity of its own: no answer passes go, no-go and deferred alike.
    expected = [DECISION_FIELDS[o]["extra.report_severity"] for o in ("go", "no_go", "deferred")]
    assert all(isinstance(v, str) for v in expected) and len(set(expected)) == 3

    go = Scenario.model_validate(scenario_data(submitted_release(LOW, "go", rita)))
    assert score(go, run_scenario("release_risk", go, reset=flush)).passed

    real = OFFLINE_ANALYSTS["detective"]

    def always_medium(data, messages=None):
        calls = real(data, messages)
        for call in calls:
            if call["name"] == "file_risk_report":
                call["arguments"]["severity"] = "medium"
        return calls

    monkeypatch.setitem(OFFLINE_ANALYSTS, "detective", always_medium)
    result = score(go, run_scenario("release_risk", go, reset=flush))
    assert "decision_quality: extra.report_severity expected 'low', got 'medium'" in result.failures


def test_fail_on_regression_without_a_baseline_is_refused():
    with pytest.raises(CommandError, match="--fail-on-regression needs --compare VERSION"):
        call_command("run_evals", "--suite", "release_risk", "--fail-on-regression")
