"""Release risk (seed 004): a release posted by CI, its tests, and the risk reports the
detective files about it (at most one per run, enforced by the database)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from casework.cases.models import Case
from casework.releases.states import ReleaseStatus

SEVERITIES = ("high", "medium", "low")


class Release(models.Model):
    # The assessment's lifecycle (casework/releases/states.py); written only through release_transition.
    Assessment = ReleaseStatus

    case = models.OneToOneField(Case, on_delete=models.CASCADE, related_name="release")
    release_id = models.CharField(max_length=64, unique=True)
    version = models.CharField(max_length=64)
    changes = models.JSONField(default=list, blank=True)
    tests_passed = models.PositiveIntegerField(default=0)
    tests_failed = models.PositiveIntegerField(default=0)
    tests_skipped = models.PositiveIntegerField(default=0)
    # Null: the CI did not send it (missing data, never assessed as low).
    error_rate = models.FloatField(null=True, blank=True, help_text="Fraction of failed requests (0.02 = 2 %).")
    response_time_p95 = models.FloatField(null=True, blank=True, help_text="Milliseconds.")
    assessment = models.CharField(max_length=10, choices=ReleaseStatus.choices, default=ReleaseStatus.RECEIVED)
    assessment_error = models.TextField(blank=True)
    submitted_via = models.CharField(max_length=20, default="api")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(assessment__in=ReleaseStatus.values), name="release_assessment_valid"),
            models.CheckConstraint(condition=Q(error_rate__isnull=True) | Q(error_rate__gte=0, error_rate__lte=1),
                                   name="release_error_rate_fraction"),
        ]

    def __str__(self) -> str:
        return f"{self.release_id} {self.version}"

    @property
    def tests_total(self) -> int:
        return self.tests_passed + self.tests_failed + self.tests_skipped

    def summary(self) -> dict:
        """The seed's release summary, as get_release_summary returns it."""
        return {
            "release_id": self.release_id, "version": self.version, "changes": list(self.changes),
            "tests": {"passed": self.tests_passed, "failed": self.tests_failed, "skipped": self.tests_skipped},
            "deployment_metrics": {"error_rate": self.error_rate, "response_time_p95": self.response_time_p95},
        }


class ReleaseTest(models.Model):
    class Status(models.TextChoices):
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="test_details")
    name = models.CharField(max_length=200)
    area = models.CharField(max_length=60, blank=True)
    critical = models.BooleanField(default=False)
    status = models.CharField(max_length=8, choices=Status.choices)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["passed", "failed", "skipped"]), name="releasetest_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    def as_dict(self) -> dict:
        return {"name": self.name, "area": self.area, "critical": self.critical, "status": self.status,
                "message": self.message}


class RiskReport(models.Model):
    report_id = models.CharField(max_length=40, unique=True)
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="reports")
    # The run that filed it: one report per run at most (the database's unique constraint).
    run = models.OneToOneField("agents.AgentRun", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="risk_report")
    severity = models.CharField(max_length=8)
    findings = models.JSONField(default=list)
    # What the detective could not read (a failed tool, a metric the CI did not send).
    missing_data = models.JSONField(default=list, blank=True)
    # Set when code raised the filed severity (a report filed without data is never low; one on
    # failing critical tests or metrics past the high thresholds is high), with why.
    adjusted_from = models.CharField(max_length=8, blank=True)
    adjusted_reason = models.TextField(blank=True)
    provider = models.CharField(max_length=40, blank=True)
    filed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-filed_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(severity__in=list(SEVERITIES)), name="riskreport_severity_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.report_id} {self.severity}"
