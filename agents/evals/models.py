"""One evaluation run of one suite, kept for the evaluations page (runs over time)."""

from __future__ import annotations

from django.db import models

from casework.security.fields import EncryptedTextField


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


class StoredScenario(models.Model):
    """A scenario added from the web ("Add to evaluation suite"): kept in the database, not
    written into the installed package, and run only once a second person approved it;
    `manage.py export_scenarios DIR` writes the approved ones out for version control."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for review"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    suite = models.CharField(max_length=40)
    scenario_id = models.CharField(max_length=100)
    # Encrypted at rest (issue 42): a scenario made from a real case carries its data (an access
    # review's one, the claim and the absence records it was checked against).
    text = EncryptedTextField(help_text="The scenario as YAML, validated against the scenario schema.")
    source = models.CharField(max_length=40, blank=True, help_text="The case it was made from.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_by = models.ForeignKey("auth.User", on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    reviewed_by = models.ForeignKey("auth.User", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)

    class Meta:
        ordering = ["suite", "scenario_id"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "scenario_id"], name="storedscenario_one_id_per_suite"),
            # The second person is a second person.
            models.CheckConstraint(condition=models.Q(reviewed_by__isnull=True)
                                   | ~models.Q(reviewed_by=models.F("created_by")),
                                   name="storedscenario_reviewer_is_not_author"),
        ]

    def __str__(self) -> str:
        return f"{self.suite}/{self.scenario_id} ({self.status})"
