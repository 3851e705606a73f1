"""One evaluation run of one suite, kept for the evaluations page (runs over time)."""

from __future__ import annotations

from django.db import models


class EvalRun(models.Model):
    suite = models.CharField(max_length=40)
    created_at = models.DateTimeField(auto_now_add=True)
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=100, blank=True)
    prompt_version = models.CharField(max_length=20, blank=True)
    total = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    pass_rate = models.FloatField(default=0)
    avg_scores = models.JSONField(default=dict)
    # The baseline it was compared with ("" for none) and how many regressions that found.
    baseline = models.CharField(max_length=64, blank=True)
    regressions = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0)
    started_by = models.CharField(max_length=150, blank=True)
    # The whole report (seed 004's shape).
    report = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["suite", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=models.Q(pass_rate__gte=0) & models.Q(pass_rate__lte=1),
                                   name="evalrun_pass_rate_0_1"),
        ]

    def __str__(self) -> str:
        return f"{self.suite} {self.created_at:%Y-%m-%d %H:%M} {self.passed}/{self.total}"


def eval_run_record(*, report: dict, started_by: str = "") -> EvalRun:
    """Store a suite's report (called after the throwaway database is gone)."""
    summary, config = report["summary"], report["config"]
    analysis = report.get("regression_analysis") or {}
    run = EvalRun(suite=report["suite"], provider=config.get("provider", ""), model=config.get("model", "")[:100],
                  prompt_version=config.get("prompt_version", ""), total=summary["total_scenarios"],
                  passed=summary["passed"], pass_rate=summary["pass_rate"], avg_scores=summary["avg_scores"],
                  baseline=analysis.get("baseline") or "", regressions=len(analysis.get("regressions") or []),
                  seconds=summary.get("seconds", 0), started_by=started_by[:150], report=report)
    run.full_clean()
    run.save()
    return run
