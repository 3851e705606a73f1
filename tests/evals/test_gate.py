"""The CI gate: every offline suite runs through the real pipelines and must not regress
against the committed baseline (agents/evals/baselines/offline.json). A deliberate change of
behaviour is recorded with `manage.py run_evals --save-baseline offline`."""

from __future__ import annotations

import pytest

from agents.evals.evaluate import run_evaluation
from agents.evals.report import baseline_load, compare
from agents.evals.schema import suite_names

pytestmark = pytest.mark.django_db(transaction=True)

BASELINE = "offline"


@pytest.fixture(autouse=True)
def _offline(settings):
    settings.LLM_PROVIDER = "offline"


@pytest.mark.long(seconds=20)
@pytest.mark.parametrize("suite", suite_names())
def test_the_offline_suite_does_not_regress_against_the_committed_baseline(suite, eval_db):
    report = run_evaluation(suite, reset=eval_db)
    baseline = baseline_load(BASELINE)["suites"][suite]
    analysis = compare(report, baseline)
    assert not analysis["regressions"], "\n".join(
        f"{r.get('metric') or r.get('scenario')}: {r['baseline']} -> {r['current']} {r.get('reason', '')}"
        for r in analysis["regressions"])
    # A scenario that fails in the baseline too is known; a new scenario must pass.
    known = {s["id"] for s in baseline["scenarios"]}
    new_failures = [s for s in report["scenarios"] if s["id"] not in known and s["status"] != "passed"]
    assert not new_failures, [(s["id"], s["failures"]) for s in new_failures]
    assert report["summary"]["judge"] == "skipped"
