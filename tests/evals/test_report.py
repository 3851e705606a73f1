"""Reports in the seed's shape, baselines by version, and regression detection at the 5% line."""

from __future__ import annotations

import json

import pytest

from agents.evals.report import baseline_load, baseline_save, build_report, compare, scenario_diff


def result(sid, status="passed", tool=1.0, decision=1.0, errors=1.0):
    return {"id": sid, "category": "c", "status": status, "failures": [] if status == "passed" else ["x"],
            "scores": {"tool_usage": tool, "decision_quality": decision, "error_handling": errors},
            "judge": {"status": "skipped", "reason": "offline"}}


def report(results):
    return build_report("release_risk", results, config={"provider": "offline"}, seconds=1.0)


def test_the_report_has_the_seeds_shape():
    made = report([result("a"), result("b", "failed", decision=0.5)])
    assert set(made) >= {"summary", "scenarios", "regression_analysis"}
    assert made["summary"]["pass_rate"] == 0.5
    assert made["summary"]["total_scenarios"] == 2
    assert made["summary"]["avg_scores"] == {"tool_usage": 1.0, "decision_quality": 0.75, "error_handling": 1.0}
    assert made["summary"]["judge"] == "skipped"
    assert "judge" not in made["summary"]["avg_scores"]  # skipped: left out of the averages
    assert set(made["regression_analysis"]) >= {"regressions", "improvements"}
    json.dumps(made)


def twenty(passing: int, decision: float = 1.0):
    return report([result(f"s{i}", decision=decision) for i in range(passing)]
                  + [result(f"s{i}", "failed") for i in range(passing, 20)])


def test_a_drop_of_exactly_five_percent_is_not_a_regression():
    # 20 of 20 -> 19 of 20: pass rate 1.0 -> 0.95, exactly 5%.
    outcome = compare(twenty(19), twenty(20))
    metrics = [r for r in outcome["regressions"] if "metric" in r]
    assert metrics == []
    assert outcome["deltas"]["pass_rate"] == -0.05


def test_a_drop_just_above_five_percent_is_a_regression():
    baseline = twenty(20)
    current = twenty(20, decision=0.9499)
    outcome = compare(current, baseline)
    assert [r["metric"] for r in outcome["regressions"]] == ["avg_scores.decision_quality"]
    assert outcome["regressions"][0]["change_pct"] == -5.01


def test_a_scenario_that_passed_and_now_fails_is_a_regression_with_its_reason():
    outcome = compare(twenty(19), twenty(20))
    assert {"scenario": "s19", "baseline": "passed", "current": "failed", "reason": "x"} in outcome["regressions"]


def test_improvements_are_listed():
    outcome = compare(twenty(20), twenty(15))
    assert any(r.get("metric") == "pass_rate" for r in outcome["improvements"])
    assert any(r.get("scenario") == "s15" for r in outcome["improvements"])


def test_baselines_are_saved_and_loaded_by_version(settings, tmp_path):
    settings.EVALS_BASELINE_DIR = str(tmp_path)
    path = baseline_save({"release_risk": twenty(20)}, "v1")
    assert path == tmp_path / "v1.json"
    loaded = baseline_load("v1")["suites"]["release_risk"]
    assert loaded["summary"]["pass_rate"] == 1.0
    assert "seconds" not in loaded["summary"]
    assert scenario_diff(twenty(19), loaded)["s19"] == {"baseline": "passed", "changes": {}}
    with pytest.raises(FileNotFoundError):
        baseline_load("v2")
    with pytest.raises(ValueError):
        baseline_save({}, "../escape")
