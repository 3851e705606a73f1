"""Comparisons: one suite against several providers, models or prompt settings, side by side.

A target is a name and the settings it runs with (LLM_PROVIDER, LLM_MODEL, OPENAI_BASE_URL,
a prompt-related setting ...): `offline=LLM_PROVIDER=offline` or
`fake=LLM_PROVIDER=openai,OPENAI_BASE_URL=http://127.0.0.1:8000/v1,LLM_MODEL=m,OPENAI_API_KEY=env:KEY`.
Only LLM, provider, evaluation and per-type agent settings may be overridden; a value
`env:NAME` is read from the environment (keys stay off the command line), and values of
settings whose name says KEY, SECRET or TOKEN are never printed. Each target runs the whole
suite (repeated when asked) with its settings in force and its provider built afresh; the
matrix gives per target the pass rate (and its 95% interval), the average scores, the judge,
tokens, cost and latency (the mean and the slowest scenario).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

from agents.evals.scoring import DIMENSIONS

# Every type's agents run on these; a type adds its own (Evaluation.setting_prefixes).
SHARED_PREFIXES = ("LLM", "OPENAI", "ANTHROPIC", "EVAL")
HIDDEN = re.compile(r"KEY|SECRET|TOKEN|PASSWORD")


@dataclass
class Target:
    name: str
    overrides: dict

    def shown(self) -> str:
        return ", ".join(f"{k}={'***' if HIDDEN.search(k) else v}" for k, v in self.overrides.items()) or "defaults"


def allowed_setting(key: str) -> bool:
    """A setting a target may change: a shared LLM or evaluation setting, or one of a case type's
    own (the prefixes its evaluation registers, read when asked: types register once apps are
    ready)."""
    from casework.cases.types import CASE_TYPES

    prefixes = list(SHARED_PREFIXES)
    for case_type in CASE_TYPES.values():
        if case_type.evaluation is not None:
            prefixes += case_type.evaluation.setting_prefixes
    return re.fullmatch(rf"(?:{'|'.join(map(re.escape, prefixes))})_[A-Z0-9_]+", key) is not None


def parse_target(text: str) -> Target:
    """NAME=SETTING=VALUE[,SETTING=VALUE ...]"""
    name, _, spec = text.partition("=")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}", name or ""):
        raise ImproperlyConfigured(f"Target {text!r}: start with a name (letters, digits, . _ -), then '='.")
    overrides: dict = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not allowed_setting(key):
            raise ImproperlyConfigured(f"Target {name!r}: {key!r} is not a setting a target may change "
                                       "(LLM_*, OPENAI_*, ANTHROPIC_*, EVAL_* or a type's agent settings).")
        if value.startswith("env:"):
            if value[4:] not in os.environ:
                raise ImproperlyConfigured(f"Target {name!r}: {key} reads ${value[4:]}, which is not set.")
            value = os.environ[value[4:]]
        else:
            try:
                value = json.loads(value)
            except ValueError:
                pass
        overrides[key] = value
    return Target(name=name, overrides=overrides)


def run_matrix(suite: str, targets: list[Target], *, reset: Callable[[], None], scenarios=None,
               repeat: int = 1) -> list[dict]:
    """One report per target, each with its row of the matrix under "matrix"."""
    from django.test import override_settings

    from agents.evals.evaluate import run_evaluation
    from agents.evals.judge import Judge
    from agents.llm.registry import reset_provider

    reports = []
    for target in targets:
        with override_settings(**target.overrides):
            reset_provider()
            try:
                report = run_evaluation(suite, reset=reset, scenarios=scenarios, repeat=repeat,
                                        judge=Judge.from_settings())
            finally:
                reset_provider()
        report["config"]["target"] = target.name
        report["matrix"] = row(target, report)
        reports.append(report)
    return reports


def row(target: Target, report: dict) -> dict:
    summary, config = report["summary"], report["config"]
    attempts = summary.get("attempts") or {}
    seconds = [s.get("seconds", 0) / max(s.get("attempts", 1), 1) for s in report["scenarios"]]
    return {"target": target.name, "settings": target.shown(), "provider": config["provider"],
            "model": config["model"], "prompt_version": config["prompt_version"],
            "passed": summary["passed"], "total": summary["total_scenarios"], "pass_rate": summary["pass_rate"],
            "attempt_rate": attempts.get("rate", summary["pass_rate"]),
            "interval": attempts.get("interval") or [0.0, 1.0],
            "scores": {d: summary["avg_scores"].get(d) for d in (*DIMENSIONS, "judge")},
            "tokens": summary.get("tokens", 0), "cost_usd": summary.get("cost_usd", 0.0),
            "latency_mean_s": round(sum(seconds) / len(seconds), 3) if seconds else 0.0,
            "latency_max_s": round(max(seconds), 3) if seconds else 0.0}


def render(rows: list[dict]) -> str:
    """The matrix as text: one column per target, one line per measure."""
    def fmt(value, kind="f2"):
        if value is None:
            return "-"
        return {"f2": f"{value:.2f}", "pct": f"{value:.0%}", "usd": f"${value:.4f}", "s": f"{value:.2f} s"}[kind] \
            if isinstance(value, int | float) else str(value)

    lines = [("", [r["target"] for r in rows]),
             ("provider / model", [f"{r['provider']}/{r['model']}" for r in rows]),
             ("prompt version", [r["prompt_version"] for r in rows]),
             ("passed", [f"{r['passed']}/{r['total']}" for r in rows]),
             ("pass rate [95%]", [f"{r['attempt_rate']:.2f} [{r['interval'][0]:.2f}, {r['interval'][1]:.2f}]"
                                  for r in rows])]
    for dim in (*DIMENSIONS, "judge"):
        lines.append((dim, [fmt(r["scores"].get(dim)) for r in rows]))
    lines += [("tokens", [str(r["tokens"]) for r in rows]), ("cost", [fmt(r["cost_usd"], "usd") for r in rows]),
              ("latency mean", [fmt(r["latency_mean_s"], "s") for r in rows]),
              ("latency max", [fmt(r["latency_max_s"], "s") for r in rows])]
    label_width = max(len(label) for label, _ in lines)
    widths = [max(len(cells[i]) for _, cells in lines) for i in range(len(rows))]
    out = []
    for label, cells in lines:
        out.append("  ".join([label.ljust(label_width), *(c.rjust(w) for c, w in zip(cells, widths, strict=True))]))
    return "\n".join(out)
