"""The report in the seed's shape, baselines saved by version id, and the comparison.

Report (one per suite):
    {"suite", "config": {provider, model, prompt_version, judge},
     "summary": {"pass_rate", "total_scenarios", "passed", "failed", "avg_scores", "judge", "seconds"},
     "scenarios": [{"id", "category", "status", "scores", "failures", "judge", "trajectory", ...}],
     "regression_analysis": {"baseline", "regressions", "improvements"}}
A baseline is a JSON file agents/evals/baselines/<version>.json holding each suite's report.
Comparing, one attempt per scenario on both sides: every metric (a suite's pass rate and
average scores) whose value dropped by MORE than 5% of the baseline's value is a regression (a
warning, and exit 1 with --fail-on-regression); so is a scenario that passed in the baseline and
fails now. A rise by more than 5%, or a scenario that now passes, is an improvement.
With repeats (--repeat N, N > 1, on either side) noise would trip the 5% rule: a drop counts
only when a two-proportion test over the attempts finds it (agents.evals.stats), for the
suite's pass rate and for each scenario; the Wilson intervals are reported beside.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from django.conf import settings

from agents.evals.scoring import DIMENSIONS
from agents.evals.stats import ALPHA, pass_at_k, pass_hat_k, two_proportion, wilson

REGRESSION_THRESHOLD = 0.05
VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def baselines_dir() -> Path:
    return Path(getattr(settings, "EVALS_BASELINE_DIR", "") or Path(__file__).resolve().parent / "baselines")


def build_report(suite: str, results: list[dict], *, config: dict, seconds: float) -> dict:
    """`results`: one dict per scenario (id, category, status, scores, failures, judge ...)."""
    total = len(results)
    passed = sum(1 for r in results if r["status"] == "passed")
    avg = {}
    for d in DIMENSIONS:
        # A report of an older shape (a stored run, a baseline) may lack a newer dimension.
        values = [r["scores"][d] for r in results if d in r["scores"]]
        if values or not total:
            avg[d] = round(sum(values) / len(values), 4) if values else 0.0
    judged = [r["judge"]["score"] for r in results if r.get("judge", {}).get("status") == "scored"]
    if judged:
        avg["judge"] = round(sum(judged) / len(judged), 4)
    runs = sum(r.get("attempts", 1) for r in results)
    runs_passed = sum(r.get("passes", int(r["status"] == "passed")) for r in results)
    k = min((r.get("attempts", 1) for r in results), default=1)
    attempts = {"runs": runs, "passed": runs_passed, "rate": round(runs_passed / runs, 4) if runs else 0.0,
                "interval": list(wilson(runs_passed, runs)), "k": k,
                "pass_at_k": _mean([pass_at_k(r.get("attempts", 1), r.get("passes", int(r["status"] == "passed")), k)
                                    for r in results]),
                "pass_hat_k": _mean([pass_hat_k(r.get("attempts", 1), r.get("passes", int(r["status"] == "passed")),
                                                k) for r in results])}
    return {
        "suite": suite,
        "config": config,
        "summary": {"pass_rate": round(passed / total, 4) if total else 0.0, "total_scenarios": total,
                    "passed": passed, "failed": total - passed, "avg_scores": avg,
                    "judge": "scored" if judged else "skipped", "seconds": round(seconds, 2),
                    "attempts": attempts,
                    "cost_usd": round(sum(r.get("cost_usd", 0) for r in results), 6),
                    "tokens": sum(sum((r.get("tokens") or {}).values()) for r in results)},
        "scenarios": results,
        "regression_analysis": {"baseline": None, "regressions": [], "improvements": []},
    }


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _attempts(report: dict) -> tuple[int, int]:
    """(passed, runs) over every attempt; a report from before repeats counts scenarios."""
    summary = report["summary"]
    found = summary.get("attempts")
    if found:
        return found["passed"], found["runs"]
    return summary["passed"], summary["total_scenarios"]


def metrics(report: dict) -> dict[str, float]:
    summary = report["summary"]
    return {"pass_rate": summary["pass_rate"], **{f"avg_scores.{k}": v for k, v in summary["avg_scores"].items()}}


def compare(current: dict, baseline: dict, *, threshold: float = REGRESSION_THRESHOLD) -> dict:
    """Deltas of every metric, regressions and improvements, for one suite's report.

    When either side repeated its scenarios (N > 1), a drop is a regression only when a
    one-sided two-proportion test over the attempts says so (p < ALPHA): the suite's pass
    rate over all attempts, and each scenario's own attempts; averages are reported, not
    gated, as they move with the same passes. With one attempt each, the 5% rule stands."""
    regressions, improvements, deltas = [], [], {}
    base_metrics, now_metrics = metrics(baseline), metrics(current)
    (k1, n1), (k2, n2) = _attempts(baseline), _attempts(current)
    repeated = n1 > baseline["summary"]["total_scenarios"] or n2 > current["summary"]["total_scenarios"]
    if repeated:
        return _compare_repeated(current, baseline, (k1, n1), (k2, n2), base_metrics, now_metrics)
    for name, before in base_metrics.items():
        if name not in now_metrics:
            continue
        after = now_metrics[name]
        delta = round(after - before, 6)
        deltas[name] = delta
        change = round((after - before) / before, 9) if before else (1.0 if after > 0 else 0.0)
        entry = {"metric": name, "baseline": before, "current": after, "delta": delta,
                 "change_pct": round(change * 100, 2)}
        if change < -threshold:
            regressions.append(entry)
        elif change > threshold:
            improvements.append(entry)
    before_status = {s["id"]: s["status"] for s in baseline.get("scenarios", [])}
    for scenario in current["scenarios"]:
        was = before_status.get(scenario["id"])
        if was == "passed" and scenario["status"] != "passed":
            regressions.append({"scenario": scenario["id"], "baseline": was, "current": scenario["status"],
                                "reason": "; ".join(scenario.get("failures", [])[:3])})
        elif was is not None and was != "passed" and scenario["status"] == "passed":
            improvements.append({"scenario": scenario["id"], "baseline": was, "current": "passed"})
    return {"regressions": regressions, "improvements": improvements, "deltas": deltas}


def _compare_repeated(current: dict, baseline: dict, before: tuple[int, int], after: tuple[int, int],
                      base_metrics: dict, now_metrics: dict) -> dict:
    regressions, improvements = [], []
    deltas = {name: round(now_metrics[name] - value, 6) for name, value in base_metrics.items() if name in now_metrics}
    (k1, n1), (k2, n2) = before, after
    entry = {"metric": "pass_rate (attempts)", "baseline": round(k1 / n1, 4) if n1 else 0.0,
             "current": round(k2 / n2, 4) if n2 else 0.0, "baseline_interval": list(wilson(k1, n1)),
             "current_interval": list(wilson(k2, n2)), "test": "two-proportion z, one-sided"}
    entry["delta"] = round(entry["current"] - entry["baseline"], 6)
    down, up = two_proportion(k1, n1, k2, n2), two_proportion(k2, n2, k1, n1)
    if down < ALPHA:
        regressions.append({**entry, "p_value": down})
    elif up < ALPHA:
        improvements.append({**entry, "p_value": up})
    old = {s["id"]: s for s in baseline.get("scenarios", [])}
    for scenario in current["scenarios"]:
        was = old.get(scenario["id"])
        if was is None:
            continue
        a1, m1 = was.get("passes", int(was["status"] == "passed")), was.get("attempts", 1)
        a2, m2 = scenario.get("passes", int(scenario["status"] == "passed")), scenario.get("attempts", 1)
        item = {"scenario": scenario["id"], "baseline": f"{a1}/{m1}", "current": f"{a2}/{m2}",
                "current_interval": list(wilson(a2, m2))}
        p_down = two_proportion(a1, m1, a2, m2)
        if p_down < ALPHA:
            regressions.append({**item, "p_value": p_down, "reason": "; ".join(scenario.get("failures", [])[:3])})
        elif two_proportion(a2, m2, a1, m1) < ALPHA:
            improvements.append({**item, "p_value": two_proportion(a2, m2, a1, m1)})
    return {"regressions": regressions, "improvements": improvements, "deltas": deltas,
            "method": "two-proportion test over repeats"}


def scenario_diff(current: dict, baseline: dict | None) -> dict[str, dict]:
    """Per scenario id: its baseline status and the score changes (for the page)."""
    if not baseline:
        return {}
    before = {s["id"]: s for s in baseline.get("scenarios", [])}
    diff = {}
    for scenario in current.get("scenarios", []):
        old = before.get(scenario["id"])
        if old is None:
            diff[scenario["id"]] = {"baseline": "new", "changes": {}}
            continue
        changes = {d: round(scenario["scores"].get(d, 0) - old["scores"].get(d, 0), 4) for d in DIMENSIONS
                   if scenario["scores"].get(d) != old["scores"].get(d)}
        diff[scenario["id"]] = {"baseline": old["status"], "changes": changes}
    return diff


def _path(version: str) -> Path:
    if not VERSION_RE.match(version or ""):
        raise ValueError(f"Baseline version {version!r}: use letters, digits, dot, dash or underscore.")
    return baselines_dir() / f"{version}.json"


def baseline_save(reports: dict[str, dict], version: str) -> Path:
    """Save (or update, suite by suite) the baseline `version`."""
    path = _path(version)
    data = baseline_load(version) if path.exists() else {"version": version, "suites": {}}
    for suite, report in reports.items():
        data["suites"][suite] = _slim(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def baseline_load(version: str) -> dict:
    path = _path(version)
    if not path.exists():
        raise FileNotFoundError(f"No baseline {version!r} ({path}).")
    return json.loads(path.read_text(encoding="utf-8"))


def _slim(report: dict) -> dict:
    """What a baseline keeps: no timings, no per-run texts (they change between runs)."""
    keep = ("id", "category", "status", "scores", "failures", "trajectory", "fields", "attempts", "passes")
    summary = {k: v for k, v in report["summary"].items() if k != "seconds"}
    return {"suite": report["suite"], "config": report["config"], "summary": summary,
            "scenarios": [{k: s[k] for k in keep if k in s} for s in report["scenarios"]]}
