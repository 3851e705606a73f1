"""run_evaluation (seed 004's interface): every scenario of a suite through the pipeline,
scored, judged when a judge is configured, gathered into the report."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings

from agents.evals.judge import SKIPPED_OFFLINE, Judge, judge_configured, judge_model
from agents.evals.prompts import prompt_version
from agents.evals.report import build_report
from agents.evals.runner import run_scenario
from agents.evals.schema import CASE_TYPES, Scenario, load_suite
from agents.evals.scoring import score


def run_config(suite: str) -> dict:
    from agents.llm.registry import get_provider

    provider = get_provider()
    return {"provider": provider.name, "model": provider.model or settings.LLM_MODEL,
            "prompt_version": prompt_version(suite),
            "judge": judge_model() if judge_configured() else "skipped (no EVAL_JUDGE_API_KEY)"}


def run_evaluation(suite: str, *, reset: Callable[[], None], scenarios: list[Scenario] | None = None,
                   progress: Callable[[int, int, str], None] | None = None, judge: Judge | None = None) -> dict:
    if suite not in CASE_TYPES:
        raise ValueError(f"Unknown suite {suite!r}.")
    scenarios = load_suite(suite) if scenarios is None else scenarios
    judge = judge if judge is not None else Judge.from_settings()
    started = time.perf_counter()
    results = []
    for number, scenario in enumerate(scenarios, 1):
        observed = run_scenario(suite, scenario, reset=reset)
        graded = score(scenario, observed)
        expected = set(scenario.expect.fields)
        results.append({
            "id": scenario.id, "category": scenario.category,
            "status": "passed" if graded.passed else "failed",
            "scores": graded.scores, "failures": graded.failures,
            "judge": judge.grade(scenario, observed) if judge else dict(SKIPPED_OFFLINE),
            "trajectory": [f"{s['name']}:{s['status']}" for s in observed.trajectory],
            "fields": {k: v for k, v in observed.fields.items() if k in expected},
            "run_statuses": observed.run_statuses, "faults_fired": observed.faults_fired,
            "grounding": observed.grounding,
            "case": observed.case_reference, "model": observed.model, "seconds": observed.seconds,
        })
        if progress:
            progress(number, len(scenarios), scenario.id)
    return build_report(suite, results, config=run_config(suite), seconds=time.perf_counter() - started)
