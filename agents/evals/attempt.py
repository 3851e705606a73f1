"""One attempt: one run of one scenario through its pipeline, scored (and judged), as a plain
dict. The evaluation runs attempts one after the other (agents.evals.evaluate) or shares
them out over worker processes (agents.evals.parallel)."""

from __future__ import annotations

from collections.abc import Callable

from agents.evals.judge import Judge, not_scored, rubric_failures
from agents.evals.runner import run_scenario
from agents.evals.schema import Scenario
from agents.evals.scoring import score


def run_attempt(suite: str, scenario: Scenario, *, reset: Callable[[], None], judge: Judge | None) -> dict:
    """One run of one scenario, scored (and judged), with what it takes to open it later."""
    observed = run_scenario(suite, scenario, reset=reset)
    graded = score(scenario, observed)
    verdict = judge.grade(scenario, observed) if judge else not_scored(scenario)
    failures = graded.failures + rubric_failures(verdict)
    expected = set(scenario.expect.fields)
    return {
        "id": scenario.id, "category": scenario.category,
        "status": "failed" if failures else "passed",
        "scores": graded.scores, "failures": failures,
        "judge": verdict,
        "trajectory": [f"{s['name']}:{s['status']}" for s in observed.trajectory],
        "fields": {k: v for k, v in observed.fields.items() if k in expected},
        "run_statuses": observed.run_statuses, "faults_fired": observed.faults_fired,
        "grounding": observed.grounding,
        "case": observed.case_reference, "model": observed.model, "seconds": observed.seconds,
        "trace_ids": observed.trace_ids, "tool_calls": observed.tool_calls, "outputs": observed.outputs,
        "tokens": {"input": observed.input_tokens, "output": observed.output_tokens},
        # What the agents and the judge spent on this attempt.
        "cost_usd": round(observed.cost_usd + (verdict.get("cost_usd") or 0), 6),
    }
