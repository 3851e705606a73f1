"""Repeats and statistics (issue 27, point 1): --repeat N, pass rate with a Wilson interval,
pass@k and pass^k, and a regression gate that tests the drop over the attempts (a bare 5% rule
only at one attempt each)."""

from __future__ import annotations

from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from agents.evals.evaluate import combine
from agents.evals.report import build_report, compare
from agents.evals.schema import load_suite
from agents.evals.stats import pass_at_k, pass_hat_k, two_proportion, wilson
from agents.llm.offline_registry import OFFLINE_ANALYSTS
from tests.evals.conftest import flush


def test_wilson_interval_and_pass_at_k():
    assert wilson(0, 10) == (0.0, 0.2775)
    assert wilson(5, 10) == (0.2366, 0.7634)
    assert wilson(10, 10) == (0.7225, 1.0)
    assert (pass_at_k(5, 3, 5), pass_hat_k(5, 3, 5)) == (1.0, 0.0)
    assert (pass_at_k(5, 3, 1), pass_hat_k(5, 3, 1)) == (0.6, 0.6)
    assert pass_hat_k(5, 4, 2) == 0.6  # C(4,2)/C(5,2)
    assert two_proportion(10, 10, 6, 10) < 0.05 < two_proportion(5, 5, 4, 5)


def attempt(status: str) -> dict:
    return {"id": "s", "category": "high", "status": status, "failures": [] if status == "passed" else ["x"],
            "scores": {"decision_quality": 1.0 if status == "passed" else 0.0}, "judge": {}, "seconds": 0.1}


def test_a_scenario_over_repeats_passes_only_when_every_attempt_does():
    result = combine([attempt("passed"), attempt("failed"), attempt("passed")])
    assert (result["status"], result["passes"], result["attempts"]) == ("failed", 2, 3)
    assert result["scores"] == {"decision_quality": 0.6667} and result["failures"] == ["x"]
    assert result["interval"] == list(wilson(2, 3))
    report = build_report("release_risk", [result], config={}, seconds=1)
    assert report["summary"]["attempts"] == {"runs": 3, "passed": 2, "rate": 0.6667, "interval": list(wilson(2, 3)),
                                             "k": 3, "pass_at_k": 1.0, "pass_hat_k": 0.0}


def test_with_one_attempt_the_five_percent_rule_stands_and_with_repeats_noise_does_not_trip_it():
    def report(*statuses_per_scenario):
        return build_report("release_risk", [combine([{**attempt(s), "id": f"s{i}"} for s in statuses])
                                             for i, statuses in enumerate(statuses_per_scenario)],
                            config={}, seconds=1)

    base = report(*[["passed"]] * 20)
    one_failed = report(*[["passed"]] * 19, ["failed"])
    assert compare(one_failed, base)["regressions"]  # 5% rule: 1.0 -> 0.95 is more than 5% down... at once
    base5 = report(*[["passed"] * 5] * 20)
    noise = report(*[["passed"] * 5] * 19, ["passed", "failed", "passed", "passed", "passed"])
    assert compare(noise, base5) == {**compare(noise, base5), "regressions": []}


PICKED = ("high_error_rate", "low_clean")


@pytest.fixture
def command(monkeypatch, settings, tmp_path):
    from contextlib import nullcontext

    from agents.evals.management.commands import run_evals

    settings.LLM_PROVIDER = "offline"
    settings.EVALS_BASELINE_DIR = str(tmp_path)
    monkeypatch.setattr(run_evals, "evaluation_database", nullcontext)
    monkeypatch.setattr(run_evals, "flush_evaluation_database", flush)
    subset = [s for s in load_suite("release_risk") if s.id in PICKED]
    monkeypatch.setattr(run_evals, "load_suite", lambda name: subset)
    return tmp_path


def every_second_attempt_wrong(monkeypatch):
    """A detective that files the wrong severity on every second run of the same release."""
    real, filed = OFFLINE_ANALYSTS["detective"], Counter()

    def flaky(data, messages=None):
        calls = real(data, messages)
        for call in calls:
            if call["name"] == "file_risk_report":
                filed[data["release_id"]] += 1
                if filed[data["release_id"]] % 2 == 0:
                    call["arguments"]["severity"] = "low" if call["arguments"]["severity"] == "high" else "high"
        return calls

    monkeypatch.setitem(OFFLINE_ANALYSTS, "detective", flaky)


@pytest.mark.django_db(transaction=True)
def test_a_regression_that_only_shows_over_repeats(command, monkeypatch, capsys):
    call_command("run_evals", "--suite", "release_risk", "--repeat", "5", "--save-baseline", "v5", "--no-record")
    capsys.readouterr()
    every_second_attempt_wrong(monkeypatch)

    # One attempt each: every scenario's first run is right, so nothing shows.
    call_command("run_evals", "--suite", "release_risk", "--compare", "v5", "--fail-on-regression", "--no-record")
    assert "REGRESSION" not in capsys.readouterr().err

    # Five more attempts each (runs 2 to 6 of each release: 2, 4 and 6 wrong): 4 of 10 pass
    # against 10 of 10; the test finds it, with intervals.
    with pytest.raises(CommandError, match="regression") as caught:
        call_command("run_evals", "--suite", "release_risk", "--repeat", "5", "--compare", "v5",
                     "--fail-on-regression", "--no-record")
    assert caught.value.returncode == 1
    out, err = capsys.readouterr()
    assert "over 10 runs (5 per scenario): pass rate 0.40 [0.17, 0.69] (95% Wilson); pass@5 1.00, pass^5 0.00" in out
    assert "FAILED low_clean (2/5 runs passed, 95% [0.12, 0.77])" in out
    assert "REGRESSION pass_rate (attempts): 1.0 -> 0.4 [0.72, 1.00] -> [0.17, 0.69] p=0.0017" in err
    assert "REGRESSION high_error_rate: 5/5 -> 2/5 p=0.0192" in err


def test_repeat_must_be_positive():
    with pytest.raises(CommandError, match="--repeat and --workers"):
        call_command("run_evals", "--repeat", "0")
