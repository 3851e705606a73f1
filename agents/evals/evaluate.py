"""run_evaluation (seed 004's interface): every scenario of a suite through the pipeline,
scored, judged when a judge is configured, gathered into the report."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings

from agents.evals.attempt import run_attempt
from agents.evals.judge import Judge, judge_configured, judge_model
from agents.evals.prompts import prompt_version
from agents.evals.report import build_report
from agents.evals.schema import Scenario, load_suite, suite_types
from agents.evals.stats import pass_at_k, pass_hat_k, wilson


def run_config(suite: str) -> dict:
    from agents.llm.registry import get_provider

    provider = get_provider()
    return {"provider": provider.name, "model": provider.model or settings.LLM_MODEL,
            "prompt_version": prompt_version(suite),
            "judge": judge_model() if judge_configured() else "skipped (no EVAL_JUDGE_API_KEY)"}


def combine(attempts: list[dict]) -> dict:
    """A scenario's result over its attempts: it passes only when every attempt passed; the
    scores are the attempts' means; the first failed attempt is the one shown (or the first)."""
    if len(attempts) == 1:
        return {**attempts[0], "attempts": 1, "passes": int(attempts[0]["status"] == "passed")}
    passes = sum(1 for a in attempts if a["status"] == "passed")
    shown = next((a for a in attempts if a["status"] != "passed"), attempts[0])
    names = {d for a in attempts for d in a["scores"]}
    scores = {d: round(sum(a["scores"].get(d, 0) for a in attempts) / len(attempts), 4) for d in sorted(names)}
    low, high = wilson(passes, len(attempts))
    return {**shown, "status": "passed" if passes == len(attempts) else "failed", "scores": scores,
            "attempts": len(attempts), "passes": passes, "interval": [low, high],
            "pass_at_k": pass_at_k(len(attempts), passes, len(attempts)),
            "pass_hat_k": pass_hat_k(len(attempts), passes, len(attempts)),
            "seconds": round(sum(a["seconds"] for a in attempts), 3),
            "cost_usd": round(sum(a.get("cost_usd", 0) for a in attempts), 6),
            "tokens": {k: sum(a.get("tokens", {}).get(k, 0) for a in attempts) for k in ("input", "output")},
            "runs": [{"status": a["status"], "failures": a["failures"][:3], "trace_ids": a.get("trace_ids", []),
                      "cost_usd": a.get("cost_usd", 0), "seconds": a["seconds"]} for a in attempts]}


class SpendCap:
    """A run's spending limit in USD, over every suite it runs: an attempt starts only while
    what was spent plus the dearest attempt so far stays within the cap, so the run stops
    before it overspends, not after."""

    def __init__(self, limit: float | None):
        self.limit, self.spent, self.dearest, self.stopped = limit, 0.0, 0.0, False

    def allows_another(self) -> bool:
        if self.limit is None:
            return True
        if self.spent + self.dearest > self.limit:
            self.stopped = True
        return not self.stopped

    def add(self, cost: float) -> None:
        self.spent += cost
        self.dearest = max(self.dearest, cost)


def run_evaluation(suite: str, *, reset: Callable[[], None], scenarios: list[Scenario] | None = None,
                   progress: Callable[[int, int, str], None] | None = None, judge: Judge | None = None,
                   repeat: int = 1, workers: int = 1, cap: SpendCap | None = None) -> dict:
    """Every scenario `repeat` times. With workers > 1 the repeats are shared out over that
    many processes, each with its own throwaway database (agents.evals.parallel); otherwise
    they run here, one after the other, on `reset`'s database."""
    if suite not in suite_types():
        raise ValueError(f"Unknown suite {suite!r}.")
    if repeat < 1:
        raise ValueError("repeat must be 1 or more.")
    scenarios = load_suite(suite) if scenarios is None else scenarios
    started = time.perf_counter()
    attempts: dict[str, list[dict]] = {s.id: [] for s in scenarios}
    if workers > 1 and repeat > 1:
        from agents.evals.parallel import run_shares

        for attempt in run_shares(suite, scenarios, repeat=repeat, workers=workers):
            attempts[attempt["id"]].append(attempt)
        if progress:
            progress(len(scenarios), len(scenarios), "")
    else:
        judge = judge if judge is not None else Judge.from_settings()
        for number, scenario in enumerate(scenarios, 1):
            for _ in range(repeat):
                if cap is not None and not cap.allows_another():
                    break
                attempt = run_attempt(suite, scenario, reset=reset, judge=judge)
                if cap is not None:
                    cap.add(attempt["cost_usd"])
                attempts[scenario.id].append(attempt)
            if progress:
                progress(number, len(scenarios), scenario.id)
    results = [combine(attempts[s.id]) for s in scenarios if attempts[s.id]]
    report = build_report(suite, results, config={**run_config(suite), "repeat": repeat},
                          seconds=time.perf_counter() - started)
    if cap is not None and cap.stopped:
        report["summary"]["stopped"] = (f"Stopped at the spend cap ${cap.limit:.4f} (spent ${cap.spent:.4f}): "
                                        f"{len(scenarios) - len(results)} scenario(s) not run, the last one "
                                        "perhaps fewer times.")
    return report
