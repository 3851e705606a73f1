"""What a release adds to the evaluation harness (agents.evals), registered on its CaseType
(casework.cases.types.case_type_register_evaluation): a scenario is submitted as the API
submits a release; a decided case becomes a scenario (the release as submitted, test messages
masked); the filed risk report is the decision field beside the record."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from casework.cases.types import Evaluation, Grounding

ACTOR = "evaluation"

# The person's outcome -> what the detective should have concluded.
# One severity per outcome: a detective that always says "medium" must not pass a go and a
# no-go alike (it did when each outcome accepted "medium").
DECISION_FIELDS = {"go": {"extra.report_severity": "low"},
                   "no_go": {"extra.report_severity": "high"},
                   "deferred": {"extra.report_severity": "medium"}}


def submit_release(data: dict, reference: dict) -> None:
    from casework.releases.services import release_submit

    with transaction.atomic():
        release_submit(actor=ACTOR, data=data, via="evaluation")


def release_scenario_parts(release, mask):
    data = {"release_id": release.release_id, "version": release.version, "changes": release.changes,
            "tests": {"passed": release.tests_passed, "failed": release.tests_failed, "skipped": release.tests_skipped},
            "deployment_metrics": {"error_rate": release.error_rate, "response_time_p95": release.response_time_p95},
            "test_details": [{"name": t.name, "area": t.area, "status": t.status, "critical": t.critical,
                              "message": mask.text(t.message)} for t in release.test_details.order_by("id")]}
    return data, {}, {}


def release_observed(case) -> dict:
    """Decision fields that live beside the record: the filed report."""
    report = case.release.reports.order_by("-id").first()
    if report is None:
        return {}
    return {"extra.report_severity": report.severity, "extra.report_findings": " | ".join(report.findings),
            "extra.report_missing_data": " | ".join(report.missing_data)}


def release_statements(case) -> list[str]:
    """What the detective states: the filed report's findings (or, when none was filed, the
    findings of the detective's output)."""
    report = case.release.reports.order_by("-id").first()
    if report is not None:
        return list(report.findings)
    return []


# Test names ("test_refund_flow") and every number a finding quotes.
GROUNDING = Grounding(statements=release_statements, items={"test name": r"\btest_\w+|\b\w+_test\b|[\w/.]+\.py::\w+"}, numbers=True)

EVALUATION = Evaluation(submit=submit_release, export=release_scenario_parts, decision_fields=DECISION_FIELDS,
                        observed=release_observed, grounding=GROUNDING,
                        suite_dir=Path(__file__).resolve().parent / "scenarios",
                        setting_prefixes=("RELEASE",))
