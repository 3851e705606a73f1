"""The detective offline: a real tool-calling analyst on the runtime's tool loop."""

from __future__ import annotations

import pytest

from agents.models import AgentCall
from casework.releases.models import RiskReport
from tests.releases.conftest import LOW, MEDIUM, SEED, release, submit, t

pytestmark = pytest.mark.django_db(transaction=True)


def tools_called(run) -> list[str]:
    return list(AgentCall.objects.filter(run=run, kind="tool").order_by("id").values_list("name", flat=True))


def test_the_seeds_example_is_high_and_its_findings_quote_the_tools():
    rel, run = submit(SEED)

    report = rel.reports.get()
    assert run.status == "completed"
    assert report.severity == "high"
    assert report.run == run and report.report_id.startswith("RR-")
    assert tools_called(run) == ["get_release_summary", "get_test_details", "file_risk_report"]
    text = " ".join(report.findings)
    assert "test_refund_flow" in text and "refund total 0.00 != 19.99" in text
    assert "'Added payment processing' (payment)" in text
    assert report.missing_data == []
    rel.case.refresh_from_db()
    assert rel.case.priority == "high" and rel.case.status == "awaiting_decision"  # agents recommend; people decide


def test_a_clean_release_is_low_and_skips_the_test_details():
    rel, run = submit(LOW)

    assert rel.reports.get().severity == "low"
    assert tools_called(run) == ["get_release_summary", "file_risk_report"]


def test_a_minor_failure_is_medium():
    rel, run = submit(MEDIUM)

    report = rel.reports.get()
    assert report.severity == "medium"
    assert "test_tooltip_position" in " ".join(report.findings)


@pytest.mark.parametrize("metrics, setting, moved_to, before, after", [
    ({"error_rate": 0.08, "response_time_p95": 200}, "RELEASE_ERROR_RATE_HIGH", 0.10, "high", "medium"),
    ({"error_rate": 0.001, "response_time_p95": 1500}, "RELEASE_P95_HIGH_MS", 2000.0, "high", "medium"),
    ({"error_rate": 0.015, "response_time_p95": 200}, "RELEASE_ERROR_RATE_MEDIUM", 0.02, "medium", "low"),
    ({"error_rate": 0.001, "response_time_p95": 500}, "RELEASE_P95_MEDIUM_MS", 600.0, "medium", "low"),
])
def test_metric_thresholds_come_from_settings(settings, metrics, setting, moved_to, before, after):
    rel, _ = submit(release(LOW, release_id="at-the-defaults", deployment_metrics=metrics))
    assert rel.reports.get().severity == before

    setattr(settings, setting, moved_to)  # the same metrics, judged against the moved threshold
    rel, _ = submit(release(LOW, release_id="threshold-moved", deployment_metrics=metrics))
    assert rel.reports.get().severity == after


def test_thresholds_are_settings(settings):
    settings.RELEASE_ERROR_RATE_MEDIUM = 0.001
    rel, _ = submit(LOW)  # error rate 0.2 %: now elevated
    assert rel.reports.get().severity == "medium"


def test_a_risky_change_alone_is_medium_and_with_failures_high():
    rel, _ = submit(release(LOW, release_id="r1", changes=["Database schema migration"]))
    assert rel.reports.get().severity == "medium"

    # A failure that is medium on its own (not critical, not in a critical area) ...
    failing = {"tests": {"passed": 139, "failed": 1, "skipped": 4},
               "test_details": [t("test_tooltip_position", "ui", "failed", False, "off by 2 px")]}
    rel, _ = submit(release(LOW, release_id="r2", changes=["Tooltip fixes"], **failing))
    assert rel.reports.get().severity == "medium"
    # ... shipped with the risky change is high, and the report says it is the two together.
    rel, _ = submit(release(LOW, release_id="r3", changes=["Database schema migration"], **failing))
    report = rel.reports.get()
    assert report.severity == "high"
    assert any("'Database schema migration' (migration)" in f and "with failing tests" in f for f in report.findings)


def test_missing_metrics_are_reported_and_never_low():
    rel, _ = submit(release(LOW, deployment_metrics={}))

    report = rel.reports.get()
    assert report.severity == "medium"
    assert report.missing_data == ["the error rate", "the p95 response time"]
    assert any("Missing data" in f for f in report.findings)


def test_a_failing_tool_goes_back_to_the_model_and_the_report_says_what_was_missing(monkeypatch):
    from casework.releases import selectors

    def broken(release_id):
        raise ConnectionError("test service unavailable")

    monkeypatch.setattr(selectors, "release_test_details", broken)
    rel, run = submit(release(SEED, changes=["Tooltip fixes"]))

    details = AgentCall.objects.get(run=run, name="get_test_details")
    assert details.status == "error" and details.error_type == "ToolExecution"
    assert "test service unavailable" in details.error
    report = rel.reports.get()
    # Filed medium without the details; the release's records show a failed critical test: high.
    assert (report.adjusted_from, report.severity) == ("medium", "high")
    assert any("test details" in m and "test service unavailable" in m for m in report.missing_data)


def test_a_tool_answering_garbage_is_a_tool_error(monkeypatch):
    from casework.releases import selectors

    monkeypatch.setattr(selectors, "release_summary", lambda release_id: {"version": 3, "tests": "many"})
    rel, run = submit(LOW)

    summary = AgentCall.objects.get(run=run, name="get_release_summary")
    assert summary.status == "error" and "not a release summary" in summary.error
    report = rel.reports.get()
    assert report.severity == "high"  # nothing could be read: never low
    assert report.missing_data[0].startswith("the release summary")


def test_a_low_report_filed_without_data_is_raised_to_medium():
    from casework.releases.services import risk_report_file

    rel, run = submit(LOW)
    report = risk_report_file(run=None, release_id=rel.release_id, report_id="RR-X", severity="low",
                              findings=["Looks fine."], missing_data=["the error rate"])
    assert report.severity == "medium" and report.adjusted_from == "low"


def test_one_report_per_run_is_enforced_by_the_database():
    from django.db import IntegrityError, transaction

    rel, run = submit(LOW)
    with pytest.raises(IntegrityError), transaction.atomic():
        RiskReport.objects.create(report_id="RR-DUP", release=rel, run=run, severity="low", findings=["x"])


def test_assessing_again_files_a_second_report_from_a_new_run(alice):
    from agents.models import AgentRun
    from agents.runtime.pipeline import execute_run
    from casework.releases.services import release_reassess

    rel, first = submit(LOW)
    second = release_reassess(actor=alice, release=rel)
    execute_run(second.pk)

    assert list(rel.reports.order_by("id").values_list("run_id", flat=True)) == [first.pk, second.pk]
    assert AgentRun.objects.get(pk=second.pk).status == "completed"


@pytest.mark.parametrize("change, risky", [
    ("Updated AUTHORS and the contributor documentation", False),
    ("Docs: an authoring guide for the changelog", False),
    ("Fixed authentication bug", True),
    ("Payments: retry declined cards", True),
    ("Ran schema migrations for the orders table", True),
])
def test_a_risky_word_counts_only_as_a_whole_word(change, risky):
    """Issue 43: "auth" inside "AUTHORS", "security" or "payment" inside another word made a
    documentation change risky."""
    rel, _ = submit(release(LOW, changes=[change]))
    report = rel.reports.get()
    assert report.severity == ("medium" if risky else "low"), report.findings
    assert any("Risky change" in f for f in report.findings) is risky
