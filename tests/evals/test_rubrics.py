"""Rubrics that count (issue 27, point 4): criteria with a weight and a threshold, each scored
with a reason by the judge, an agent on the runtime (here the fake OpenAI-compatible server
over real HTTP); a scenario passes only when its criteria do; offline they are "not scored"."""

from __future__ import annotations

import json

import pytest

from agents.evals.evaluate import run_evaluation
from agents.evals.judge import Judge
from agents.evals.schema import Scenario, load_suite
from tests.evals.conftest import flush
from tests.fakes.llm_servers import FakeOpenAIServer, error, json_answer

pytestmark = pytest.mark.django_db(transaction=True)

SEED = "high_seed_example"


@pytest.fixture
def judge_server(settings):
    settings.LLM_PROVIDER = "offline"
    settings.LLM_RETRY_INITIAL_DELAY, settings.LLM_RETRY_MAX_DELAY = 0.001, 0.01
    with FakeOpenAIServer() as server:
        settings.EVAL_JUDGE_API_KEY, settings.EVAL_JUDGE_BASE_URL = "judge-key", server.base_url
        settings.EVAL_JUDGE_MODEL = "judge-model"
        yield server


def seed() -> list[Scenario]:
    return [s for s in load_suite("release_risk") if s.id == SEED]


def verdict(**scores) -> dict:
    return {"criteria": [{"id": name, "score": value, "reason": f"{name} reason"} for name, value in scores.items()]}


def test_a_criterion_below_its_threshold_fails_the_scenario(judge_server):
    judge_server.script(json_answer(verdict(findings_quote_the_data=0.9, severity_explained=0.4,
                                            short_and_distinct=0.8)))
    report = run_evaluation("release_risk", scenarios=seed(), reset=flush, judge=Judge.from_settings())
    [result] = report["scenarios"]
    assert result["status"] == "failed"
    assert result["failures"] == ["rubric: severity_explained scored 0.40, below its threshold 0.70: "
                                  "severity_explained reason"]
    judged = result["judge"]
    assert [(c["id"], c["status"]) for c in judged["criteria"]] == [
        ("findings_quote_the_data", "passed"), ("severity_explained", "failed"), ("short_and_distinct", "passed")]
    assert judged["score"] == round((0.9 * 2 + 0.4 * 2 + 0.8) / 5, 4) and judged["model"] == "judge-model"
    assert judged["trace_id"] and judged["tokens"]["input"] > 0  # through the runtime: traced, counted
    # The judge read the criteria and the outputs, fenced as data.
    sent = json.dumps(judge_server.requests[-1].json)
    assert "severity_explained" in sent and "test_refund_flow" in sent
    assert report["summary"]["avg_scores"]["judge"] == judged["score"]


def test_all_criteria_met_pass_and_a_criterion_left_unscored_or_a_failing_judge_does_not(judge_server):
    judge_server.script(json_answer(verdict(findings_quote_the_data=0.9, severity_explained=0.8,
                                            short_and_distinct=0.7)),
                        json_answer(verdict(findings_quote_the_data=0.9, severity_explained=0.8)),
                        *[error(500, "judge down")] * 4)
    judge = Judge.from_settings()
    passed = run_evaluation("release_risk", scenarios=seed(), reset=flush, judge=judge)["scenarios"][0]
    assert passed["status"] == "passed" and passed["judge"]["passed"] is True
    missing = run_evaluation("release_risk", scenarios=seed(), reset=flush, judge=judge)["scenarios"][0]
    assert missing["failures"] == ["rubric: short_and_distinct was not scored: The judge gave this criterion no score."]
    down = run_evaluation("release_risk", scenarios=seed(), reset=flush, judge=judge)["scenarios"][0]
    assert down["status"] == "failed" and down["failures"][0].startswith("rubric: The judge failed")


def test_offline_the_criteria_are_not_scored_never_passed(settings):
    settings.LLM_PROVIDER, settings.EVAL_JUDGE_API_KEY = "offline", ""
    report = run_evaluation("release_risk", scenarios=seed(), reset=flush)
    [result] = report["scenarios"]
    assert result["status"] == "passed"  # on its exact criteria
    assert result["judge"]["status"] == "not scored"
    assert {c["status"] for c in result["judge"]["criteria"]} == {"not scored"}
    assert "judge" not in report["summary"]["avg_scores"] and report["summary"]["judge"] == "skipped"


def test_a_rubric_is_criteria_with_weight_and_threshold_and_the_suites_have_real_ones():
    with pytest.raises(ValueError, match="threshold"):
        Scenario.model_validate({"id": "s", "category": "c", "input": {}, "expect": {"rubric": [
            {"id": "a", "question": "Is it right at all?", "threshold": 2}]}})
    old = Scenario.model_validate({"id": "s", "category": "c", "input": {}, "expect": {"rubric": "free text"}})
    assert (old.expect.rubric, old.expect.notes) == ([], "free text")
    for suite in ("release_risk", "support_ticket", "transaction_investigation"):
        for scenario in load_suite(suite):
            assert scenario.expect.rubric, scenario.id
            assert all(c.question != scenario.description for c in scenario.expect.rubric)
