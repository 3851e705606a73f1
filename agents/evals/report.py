"""The report in the seed's shape, baselines saved by version id, and the comparison.

Report (one per suite):
    {"suite", "config": {provider, model, prompt_version, judge},
     "summary": {"pass_rate", "total_scenarios", "passed", "failed", "avg_scores", "judge", "seconds"},
     "scenarios": [{"id", "category", "status", "scores", "failures", "judge", "trajectory", ...}],
     "regression_analysis": {"baseline", "regressions", "improvements"}}
A baseline is a JSON file agents/evals/baselines/<version>.json holding each suite's report.
Comparing: every metric (a suite's pass rate and average scores) whose value dropped by MORE
than 5% of the baseline's value is a regression (a warning, and exit 1 with
--fail-on-regression); so is a scenario that passed in the baseline and fails now. A rise by
more than 5%, or a scenario that now passes, is an improvement.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from django.conf import settings

from agents.evals.scoring import DIMENSIONS

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
    return {
        "suite": suite,
        "config": config,
        "summary": {"pass_rate": round(passed / total, 4) if total else 0.0, "total_scenarios": total,
                    "passed": passed, "failed": total - passed, "avg_scores": avg,
                    "judge": "scored" if judged else "skipped", "seconds": round(seconds, 2)},
        "scenarios": results,
        "regression_analysis": {"baseline": None, "regressions": [], "improvements": []},
    }


def metrics(report: dict) -> dict[str, float]:
    summary = report["summary"]
    return {"pass_rate": summary["pass_rate"], **{f"avg_scores.{k}": v for k, v in summary["avg_scores"].items()}}


def compare(current: dict, baseline: dict, *, threshold: float = REGRESSION_THRESHOLD) -> dict:
    """Deltas of every metric, regressions and improvements, for one suite's report."""
    regressions, improvements, deltas = [], [], {}
    base_metrics, now_metrics = metrics(baseline), metrics(current)
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
    keep = ("id", "category", "status", "scores", "failures", "trajectory", "fields")
    summary = {k: v for k, v in report["summary"].items() if k != "seconds"}
    return {"suite": report["suite"], "config": report["config"], "summary": summary,
            "scenarios": [{k: s[k] for k in keep if k in s} for s in report["scenarios"]]}
